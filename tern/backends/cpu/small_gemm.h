// A single-threaded f32 GEMM for the small per-head blocks of attention (m, n, k in 16..512,
// e.g. Q K^T at 128x128x64 and P V at 128x64x128), called from inside a kernel's own OpenMP loop
// where oneDNN's per-call overhead and threading would cost more than the product. Register-blocked
// AVX-512 microkernels where the CPU has them (cpu_runs_v4_variants()), else AVX2 code. No packing
// and no allocation: the operands of such blocks already sit in L1/L2.
//
// Compiled for x86-64-v3 (cpu_isa.h): call these only where cpu_isa() is kX86_64_v3, i.e. from
// the vectorized kernel families.
#pragma once

#include <cstdint>

namespace tern::cpu {

// C[m x n] = alpha * op(A)[m x k] * B[k x n]; all row-major f32, C overwritten (not accumulated).
// op(A) = A (element (i, p) at a[i * lda + p]) or, with trans_a, A^T (element (i, p) at
// a[p * lda + i]). B's element (p, j) at b[p * ldb + j]; C's (i, j) at c[i * ldc + j]. One
// thread; no allocation. k == 0 writes zeros. C must not overlap A or B.
void small_gemm(bool trans_a, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
                int64_t lda, const float* b, int64_t ldb, float* c, int64_t ldc);

// dst[j * ldd + i] = src[i * lds + j] for i < rows, j < cols (a transposing copy, f32), used to
// pack K^T / V^T blocks. dst must not overlap src.
void transpose_f32(int64_t rows, int64_t cols, const float* src, int64_t lds, float* dst,
                   int64_t ldd);

// The two builds behind the entry points above, for tests: the _v4 ones need a CPU with
// x86-64-v4 (AVX-512 F/BW/DQ/VL), whatever TERN_CPU_ISA says.
namespace detail {
void small_gemm_v3(bool trans_a, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
                   int64_t lda, const float* b, int64_t ldb, float* c, int64_t ldc);
void small_gemm_v4(bool trans_a, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
                   int64_t lda, const float* b, int64_t ldb, float* c, int64_t ldc);
// (transpose_f32_v3 lives in transpose_vec.cc: the transpose kernel's 8 x 8 tiles.)
void transpose_f32_v3(int64_t rows, int64_t cols, const float* src, int64_t lds, float* dst,
                      int64_t ldd);
void transpose_f32_v4(int64_t rows, int64_t cols, const float* src, int64_t lds, float* dst,
                      int64_t ldd);
}  // namespace detail

}  // namespace tern::cpu
