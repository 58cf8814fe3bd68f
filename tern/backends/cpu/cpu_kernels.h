// Fast CPU kernel families (each in its own file) registered ahead of `ref`.
#pragma once

#include "tern/kernels/kernel.h"

namespace tern::cpu {

// Priorities: oneDNN candidates 20, vectorized loops 10, ref 0.
constexpr int kOneDnnPriority = 20;
constexpr int kVectorPriority = 10;

void register_cpu_kernels(kernels::KernelRegistry& r);

void register_optimizer_kernels(kernels::KernelRegistry& r);          // optimizer_update.cc
void register_softmax_xent_kernels(kernels::KernelRegistry& r);       // softmax_xent_cpu.cc
void register_dropout_kernels(kernels::KernelRegistry& r);            // dropout_cpu.cc
void register_reduce_kernels(kernels::KernelRegistry& r);             // reduce_sum.cc
void register_transpose_kernels(kernels::KernelRegistry& r);          // transpose_vec.cc
void register_fused_elementwise_kernels(kernels::KernelRegistry& r);  // fused_elementwise_cpu.cc
void register_batch_norm_kernels(kernels::KernelRegistry& r);         // batch_norm_cpu.cc
void register_layer_norm_kernels(kernels::KernelRegistry& r);         // layer_norm_cpu.cc
void register_all_finite_kernels(kernels::KernelRegistry& r);         // all_finite_cpu.cc
void register_max_pool_grad_kernels(kernels::KernelRegistry& r);      // max_pool_grad_cpu.cc

}  // namespace tern::cpu
