// A single-threaded f32 GEMM for the small per-head blocks of attention (m, n, k in 16..512,
// e.g. Q K^T at 128x128x64 and P V at 128x64x128) and the fused Winograd convolutions' per-block
// products (onednn_conv_winograd.cc: [18, 64] x [64, 64] per position of the tile) and the row
// blocks of cpu_matmul_f32 (matmul_f32_cpu.cc: 48 rows against a b of at most 256 x 256), called
// from inside a kernel's own OpenMP loop where oneDNN's per-call overhead and threading would cost
// more than the product. Register-blocked AVX-512 microkernels where the CPU has them
// (cpu_runs_v4_variants()), else AVX2 code. No packing and no allocation: the operands of such
// blocks already sit in L1/L2.
//
// Compiled for x86-64-v3 (cpu_isa.h): call these only where cpu_isa() is kX86_64_v3, i.e. from
// the vectorized kernel families.
#pragma once

#include <cstdint>

#include "tern/tensor/dtype.h"

namespace tern::cpu {

// C[m x n] = alpha * op(A)[m x k] * B[k x n]; all row-major f32, C overwritten (not accumulated).
// op(A) = A (element (i, p) at a[i * lda + p]) or, with trans_a, A^T (element (i, p) at
// a[p * lda + i]). B's element (p, j) at b[p * ldb + j]; C's (i, j) at c[i * ldc + j]. One
// thread; no allocation. k == 0 writes zeros. C must not overlap A or B.
void small_gemm(bool trans_a, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
                int64_t lda, const float* b, int64_t ldb, float* c, int64_t ldc);

// C[m x n] = A[m x k] * B[k x n] + bias (bias: n values added to every row, or null), operands as
// small_gemm's without trans_a: rows of a matmul with its bias epilogue (cpu_matmul_f32).
void small_gemm_bias(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b,
                     int64_t ldb, float* c, int64_t ldc, const float* bias);

// C[m x n] += op(A)[m x k] * B[k x n], operands as small_gemm's: the accumulating form, for
// products cut along k (a Winograd filter gradient's blocks of tiles).
void small_gemm_acc(bool trans_a, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
                    const float* b, int64_t ldb, float* c, int64_t ldc);

// dst[j * ldd + i] = src[i * lds + j] for i < rows, j < cols (a transposing copy, f32), used to
// pack K^T / V^T blocks. dst must not overlap src.
void transpose_f32(int64_t rows, int64_t cols, const float* src, int64_t lds, float* dst,
                   int64_t ldd);

// --- bf16 operands (small_gemm_bf16.cc): AVX512_BF16's vdpbf16ps, f32 accumulation ---
// Operands come in pairs along k, one 32-bit word per pair: (x, y) = bits(x) | bits(y) << 16, the
// layout of two adjacent bf16 values in memory. Only where small_gemm_bf16_available().

// Whether the CPU runs small_gemm_bf16 (x86-64-v4 variants allowed and AVX512_BF16).
bool small_gemm_bf16_available();
// Whether bf16 products run on these tiles rather than widened or on oneDNN's: where the dot
// product runs at twice the f32 FMA's FLOPs (an AMD CPU with it) and bf16 contractions are not
// widened (TERN_BF16_CONTRACTIONS). The rule of attention's bf16 products and the bf16 matmul
// kernels (matmul_bf16_cpu.cc).
bool bf16_products_native();

// C[m x n] = alpha * A B over kp pairs of k (f32 C overwritten). A's pair (i, q) = (A[i, 2q],
// A[i, 2q + 1]) at a[i * lda + q], or with trans_a at a[q * lda + i]; B's (q, j) = (B[2q, j],
// B[2q + 1, j]) at b[q * ldb + j]. One thread; no allocation.
void small_gemm_bf16(bool trans_a, int64_t m, int64_t n, int64_t kp, float alpha, const uint32_t* a,
                     int64_t lda, const uint32_t* b, int64_t ldb, float* c, int64_t ldc);

// C[m x n] += A B over kp pairs, A given as with trans_a above (A's pair (i, q) at a[q * lda + i]):
// the accumulating form, for products cut along k (a weight gradient's blocks of rows).
void small_gemm_bf16_acc(int64_t m, int64_t n, int64_t kp, const uint32_t* a, int64_t lda,
                         const uint32_t* b, int64_t ldb, float* c, int64_t ldc);

// C[m x n] = A B (+ bias[j] when bias is not null), A's pair (i, q) at a[i * lda + q] (a bf16
// matrix's rows read in place when k is even), B's (q, j) at b[q * ldb + j]: C f32 (c_dtype kF32)
// or bf16 rounded to nearest even (kBF16); bias f32 or bf16 (bias_dtype). Rows of a matmul with
// its bias epilogue.
void small_gemm_bf16_bias(int64_t m, int64_t n, int64_t kp, const uint32_t* a, int64_t lda,
                          const uint32_t* b, int64_t ldb, void* c, DType c_dtype, int64_t ldc,
                          const void* bias, DType bias_dtype);

// dst[q * ldd + j] = (src[2q, j], src[2q + 1, j]) for q < ceil(rows / 2), j < cols: rows paired for
// small_gemm_bf16's B (or its trans_a A); an odd last row pairs with +0. From bf16 values, or from
// f32 values rounded to bf16 (nearest even).
void pair_rows_bf16(int64_t rows, int64_t cols, const bfloat16* src, int64_t lds, uint32_t* dst,
                    int64_t ldd);
void pair_rows_f32(int64_t rows, int64_t cols, const float* src, int64_t lds, uint32_t* dst,
                   int64_t ldd);
// dst[i * ldd + j] = src[i * lds + j] rounded to bf16 (nearest even), i < rows, j < cols: f32 rows
// as small_gemm_bf16's A (cols even).
void round_rows_f32(int64_t rows, int64_t cols, const float* src, int64_t lds, bfloat16* dst,
                    int64_t ldd);

// The two builds behind the entry points above, for tests: the _v4 ones need a CPU with
// x86-64-v4 (AVX-512 F/BW/DQ/VL), whatever TERN_CPU_ISA says.
namespace detail {
void small_gemm_v3(bool trans_a, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
                   int64_t lda, const float* b, int64_t ldb, float* c, int64_t ldc);
void small_gemm_v4(bool trans_a, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
                   int64_t lda, const float* b, int64_t ldb, float* c, int64_t ldc);
void small_gemm_bias_v4(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
                        const float* b, int64_t ldb, float* c, int64_t ldc, const float* bias);
void small_gemm_acc_v3(bool trans_a, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
                       const float* b, int64_t ldb, float* c, int64_t ldc);
void small_gemm_acc_v4(bool trans_a, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
                       const float* b, int64_t ldb, float* c, int64_t ldc);
// (transpose_f32_v3 lives in transpose_vec.cc: the transpose kernel's 8 x 8 tiles.)
void transpose_f32_v3(int64_t rows, int64_t cols, const float* src, int64_t lds, float* dst,
                      int64_t ldd);
void transpose_f32_v4(int64_t rows, int64_t cols, const float* src, int64_t lds, float* dst,
                      int64_t ldd);
}  // namespace detail

}  // namespace tern::cpu
