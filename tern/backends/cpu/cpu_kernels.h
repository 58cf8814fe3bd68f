// Fast CPU kernel families (each in its own file) registered ahead of `ref`.
#pragma once

#include <string_view>

#include "tern/kernels/kernel.h"
#include "tern/ops/conv_geometry.h"
#include "tern/ops/fused_program.h"

namespace tern::cpu {

// Priorities: oneDNN candidates 20, vectorized loops 10, ref 0.
constexpr int kOneDnnPriority = 20;
constexpr int kVectorPriority = 10;

void register_cpu_kernels(kernels::KernelRegistry& r);

// An on/off environment switch of a kernel choice (TERN_WINOGRAD_FUSED, ...): unset or "1" on, "0"
// off, anything else an InvalidArgument error naming it and what each value does.
bool env_switch(const char* name, std::string_view on, std::string_view off);

void register_optimizer_kernels(kernels::KernelRegistry& r);          // optimizer_update.cc
void register_softmax_xent_kernels(kernels::KernelRegistry& r);       // softmax_xent_cpu.cc
void register_dropout_kernels(kernels::KernelRegistry& r);            // dropout_cpu.cc
void register_attention_kernels(kernels::KernelRegistry& r);          // attention_cpu.cc
void register_reduce_kernels(kernels::KernelRegistry& r);             // reduce_sum.cc
void register_transpose_kernels(kernels::KernelRegistry& r);          // transpose_vec.cc
void register_scatter_add_kernels(kernels::KernelRegistry& r);        // scatter_add_cpu.cc
void register_row_copy_kernels(kernels::KernelRegistry& r);           // row_copy_cpu.cc
void register_fused_elementwise_kernels(kernels::KernelRegistry& r);  // fused_elementwise_cpu.cc
// The vector loop of one fused_elementwise opcode over n floats, y = op(a[, b]); nullptr for an
// opcode without one (a test checks there is none).
using FusedVectorFn = void (*)(const float* a, const float* b, float* y, int64_t n);
FusedVectorFn fused_vector_fn(ops::FusedOpcode op);
void register_batch_norm_kernels(kernels::KernelRegistry& r);  // batch_norm_cpu.cc
void register_layer_norm_kernels(kernels::KernelRegistry& r);  // layer_norm_cpu.cc
void register_all_finite_kernels(kernels::KernelRegistry& r);  // all_finite_cpu.cc
void register_max_pool_kernels(kernels::KernelRegistry& r);    // max_pool_cpu.cc
// max_pool2d (NaN-keeping, as the kernel) of f32 x in oneDNN's nChw16c layout ([n][c / 16][h][w]
// [16]; c a multiple of 16) into NHWC y, for windows that lie fully inside x (VALID padding) and
// do not overlap (stride >= ksize). x86-64-v3 code: call only when cpu_isa() has it.
void max_pool2d_blocked16_to_nhwc(const ops::Pool2dGeometry& g, const float* x, float* y);
void register_max_pool_grad_kernels(kernels::KernelRegistry& r);       // max_pool_grad_cpu.cc
void register_pool_argmax_kernels(kernels::KernelRegistry& r);         // pool_argmax_cpu.cc
void register_pooled_filter_grad_kernels(kernels::KernelRegistry& r);  // pooled_filter_grad_cpu.cc
// Whether the one-channel first layer trains fused with its pooling: AVX-512 and
// TERN_ONE_CHANNEL_POOLED_CONV not 0 (its pooled filter gradient registered, its argmax-pooled
// forward taken). x86-64-v3 code (pooled_filter_grad_cpu.cc).
bool one_channel_pooled_training();
// fused_conv2d of one input channel with a 2x2 max pooling (conv_pool_one_channel_cpu.cc).
void register_conv_pool_one_channel_kernels(kernels::KernelRegistry& r);
// A 3x3 layer trained under a 2x2 max pooling on tern's fused Winograd (fused_conv2d with
// pool = "max_argmax" and its pooled gradients; pooled_winograd_cpu.cc).
void register_pooled_winograd_kernels(kernels::KernelRegistry& r);
// conv2d / fused_conv2d of 3x3 filters over small images against a constant filter
// (conv_small_image_cpu.cc).
void register_conv_small_image_kernels(kernels::KernelRegistry& r);
// fused_conv2d of a 3x3 filter with a 2x2 max pooling, computing only the pooled pixels
// (conv_pool_cpu.cc).
void register_conv_pool_kernels(kernels::KernelRegistry& r);
// bf16 matmuls on AVX512_BF16 tiles: a^T b with an f32 result (weight gradients), and rows of a b
// or a b^T with a bias (matmul_bf16_cpu.cc).
void register_matmul_bf16_kernels(kernels::KernelRegistry& r);
// Rows of f32 a b or a b^T (+ a bias) against a small b on small_gemm's tiles (matmul_f32_cpu.cc).
void register_matmul_f32_kernels(kernels::KernelRegistry& r);

}  // namespace tern::cpu
