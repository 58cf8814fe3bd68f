// The bf16 weight gradient's product, shared by the matmul kernel cpu_weight_grad_bf16 and the
// filter gradients of 1x1 and small-image convolutions run as GEMMs (onednn_conv_gemm.cc).
//
// Compiled for x86-64-v3 (cpu_isa.h): call it only where bf16_products_native() (small_gemm.h).
#pragma once

#include <cstdint>

#include "tern/tensor/dtype.h"

namespace tern::cpu {

// C[m, n] (f32) = a^T b for bf16 a [k, m] and b [k, n] (row-major): x^T dy. Runs on the OpenMP
// threads (two threads over halves of k for a small C, else over C's columns or rows); each
// element of C sums its k in the same order whatever the thread count (matmul_bf16_cpu.cc).
void weight_grad_bf16(int64_t k, int64_t m, int64_t n, const bfloat16* a, const bfloat16* b,
                      float* c);

}  // namespace tern::cpu
