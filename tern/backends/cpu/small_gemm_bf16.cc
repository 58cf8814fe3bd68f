// small_gemm_bf16 and its packers (small_gemm.h): attention's per-head products on bf16 operands
// with AVX512_BF16's dot product (vdpbf16ps: two bf16 products per f32 lane, accumulated in f32).
//
// The operands come in pairs along k, one 32-bit word per pair (the low half the even k): A's
// rows as they lie in a bf16 tensor (q, dout) or as packed here from f32 (the probabilities and
// the scores' gradient, rounded to bf16 once); B's rows interleaved two by two. C is cut into
// 6 x 64 tiles as small_gemm's f32 AVX-512 tiles: 24 zmm accumulators over the whole k loop, each
// pair step loads 4 vectors of B's pair row and broadcasts 6 words of A: 24 dot products of 32
// bf16 each, twice the FLOPs of small_gemm's 24 FMAs per step.
#include <immintrin.h>

#include <algorithm>

#include "tern/backends/cpu/cpu_isa.h"
#include "tern/backends/cpu/small_gemm.h"
#include "tern/base/error.h"

TERN_CPU_V3_BEGIN  // the code below is x86-64-v3 (cpu_isa.h), the kernels x86-64-v4 + BF16

namespace tern::cpu {
namespace {

#define TERN_V4_BF16 __attribute__((target("arch=x86-64-v4,avx512bf16")))

constexpr int kMr = 6;  // rows of a C tile
constexpr int kNv = 4;  // zmm vectors (16 columns each) of a C tile's rows

// The maskz forms with every lane on are the plain instructions; the plain intrinsics trip GCC
// 12's -Wmaybe-uninitialized (their undefined pass-through operand), as in small_gemm.cc.
constexpr __mmask16 kAll16 = 0xFFFF;

// C[MR rows, NV * 16 columns] = alpha * A B over kp pairs; a: A's word (0, 0) (trans_a: words of
// one pair row are A's rows), b: B's pair row 0. With kMasked, the last vector's columns `last`.
// With kAcc, C += A B instead (alpha is 1).
template <int MR, int NV, bool kTransA, bool kMasked, bool kAcc>
TERN_V4_BF16 inline void tile(int64_t kp, float alpha, const uint32_t* a, int64_t lda,
                              const uint32_t* b, int64_t ldb, float* c, int64_t ldc,
                              __mmask16 last) {
  __m512 acc[MR][NV];
#pragma GCC unroll 32
  for (int r = 0; r < MR; ++r) {
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v) {
      const float* cr = c + r * ldc + 16 * v;
      if constexpr (!kAcc) {
        acc[r][v] = _mm512_setzero_ps();
      } else if (kMasked && v == NV - 1) {
        acc[r][v] = _mm512_maskz_loadu_ps(last, cr);
      } else {
        acc[r][v] = _mm512_loadu_ps(cr);
      }
    }
  }
  for (int64_t q = 0; q < kp; ++q) {
    const uint32_t* bq = b + q * ldb;
    __m512bh bv[NV];
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v) {
      bv[v] = (__m512bh)(kMasked && v == NV - 1 ? _mm512_maskz_loadu_epi32(last, bq + 16 * v)
                                                : _mm512_loadu_si512(bq + 16 * v));
    }
#pragma GCC unroll 32
    for (int r = 0; r < MR; ++r) {
      const uint32_t word = kTransA ? a[q * lda + r] : a[r * lda + q];
      const __m512bh ar = (__m512bh)_mm512_set1_epi32(static_cast<int>(word));
#pragma GCC unroll 8
      for (int v = 0; v < NV; ++v) acc[r][v] = _mm512_dpbf16_ps(acc[r][v], ar, bv[v]);
    }
  }
  const __m512 al = _mm512_set1_ps(alpha);
#pragma GCC unroll 32
  for (int r = 0; r < MR; ++r) {
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v) {
      float* cr = c + r * ldc + 16 * v;
      const __m512 out = kAcc ? acc[r][v] : _mm512_mul_ps(acc[r][v], al);
      if (kMasked && v == NV - 1) {
        _mm512_mask_storeu_ps(cr, last, out);
      } else {
        _mm512_storeu_ps(cr, out);
      }
    }
  }
}

// The last rows (< kMr) of a column block: tile with MR = rows.
template <int MR, int NV, bool kTransA, bool kMasked, bool kAcc>
TERN_V4_BF16 void row_tail(int rows, int64_t kp, float alpha, const uint32_t* a, int64_t lda,
                           const uint32_t* b, int64_t ldb, float* c, int64_t ldc, __mmask16 last) {
  if constexpr (MR > 1) {
    if (rows < MR) {
      return row_tail<MR - 1, NV, kTransA, kMasked, kAcc>(rows, kp, alpha, a, lda, b, ldb, c, ldc,
                                                          last);
    }
  }
  tile<MR, NV, kTransA, kMasked, kAcc>(kp, alpha, a, lda, b, ldb, c, ldc, last);
}

// C's column block [0, NV * 16), all m rows.
template <int NV, bool kTransA, bool kMasked, bool kAcc>
TERN_V4_BF16 void column_block(int64_t m, int64_t kp, float alpha, const uint32_t* a, int64_t lda,
                               const uint32_t* b, int64_t ldb, float* c, int64_t ldc,
                               __mmask16 last) {
  const int64_t a_row = kTransA ? 1 : lda;
  int64_t i = 0;
  for (; i + kMr <= m; i += kMr) {
    tile<kMr, NV, kTransA, kMasked, kAcc>(kp, alpha, a + i * a_row, lda, b, ldb, c + i * ldc, ldc,
                                          last);
  }
  if (i < m) {
    row_tail<kMr - 1, NV, kTransA, kMasked, kAcc>(static_cast<int>(m - i), kp, alpha, a + i * a_row,
                                                  lda, b, ldb, c + i * ldc, ldc, last);
  }
}

// The last columns (< 16 kNv): NV = their vector count, the last one masked.
template <int NV, bool kTransA, bool kAcc>
TERN_V4_BF16 void column_tail(int vectors, int64_t m, int64_t kp, float alpha, const uint32_t* a,
                              int64_t lda, const uint32_t* b, int64_t ldb, float* c, int64_t ldc,
                              __mmask16 last) {
  if constexpr (NV > 1) {
    if (vectors < NV) {
      return column_tail<NV - 1, kTransA, kAcc>(vectors, m, kp, alpha, a, lda, b, ldb, c, ldc,
                                                last);
    }
  }
  column_block<NV, kTransA, true, kAcc>(m, kp, alpha, a, lda, b, ldb, c, ldc, last);
}

template <bool kTransA, bool kAcc>
TERN_V4_BF16 void gemm(int64_t m, int64_t n, int64_t kp, float alpha, const uint32_t* a,
                       int64_t lda, const uint32_t* b, int64_t ldb, float* c, int64_t ldc) {
  constexpr int64_t kNr = 16 * kNv;
  int64_t j = 0;
  for (; j + kNr <= n; j += kNr) {
    column_block<kNv, kTransA, false, kAcc>(m, kp, alpha, a, lda, b + j, ldb, c + j, ldc, kAll16);
  }
  if (j < n) {
    const int vectors = static_cast<int>((n - j + 15) / 16);
    const int lanes = static_cast<int>(n - j) - 16 * (vectors - 1);  // in [1, 16]
    const auto last = static_cast<__mmask16>((1u << lanes) - 1u);
    column_tail<kNv, kTransA, kAcc>(vectors, m, kp, alpha, a, lda, b + j, ldb, c + j, ldc, last);
  }
}

// 16 words from two rows of 16 bf16 values each: word j = lo[j] | hi[j] << 16.
TERN_V4_BF16 inline __m512i interleave(__m256i lo, __m256i hi) {
  return _mm512_or_si512(
      _mm512_maskz_cvtepu16_epi32(kAll16, lo),
      _mm512_maskz_slli_epi32(kAll16, _mm512_maskz_cvtepu16_epi32(kAll16, hi), 16));
}

// 16 f32 values rounded to bf16 (nearest even; NaN stays NaN).
TERN_V4_BF16 inline __m256i round16(const float* p, __mmask16 lanes) {
  return (__m256i)_mm512_cvtneps_pbh(_mm512_maskz_loadu_ps(lanes, p));
}

// Rows read this far ahead of the pair being made are prefetched: the masked loads below do not
// start the hardware's prefetch, and a block of rows read cold from memory ran at ~7 GB/s on one
// Zen 5 core without it, ~28 GB/s with it (a throwaway program pairing [4096, 256] bf16 blocks).
constexpr int64_t kPrefetchRows = 8;

// dst[q * ldd + j] = (row 2q, row 2q + 1) of column j for q < ceil(rows / 2); `load(r, j, lanes)`
// gives row r's 16 bf16 values from column j (the lanes set); a missing last row pairs with 0.
// Row r's bytes start at src + r * row_stride and span row_bytes (for the prefetch; an address
// past the tensor is only prefetched, never read: prefetches do not fault).
template <typename Load>
TERN_V4_BF16 inline void pair_rows(int64_t rows, int64_t cols, Load load, uintptr_t src,
                                   int64_t row_stride, int64_t row_bytes, uint32_t* dst,
                                   int64_t ldd) {
  for (int64_t q = 0; 2 * q < rows; ++q) {
    for (int64_t r = 2 * q + kPrefetchRows; r < 2 * q + kPrefetchRows + 2; ++r) {
      const uintptr_t row = src + static_cast<uintptr_t>(r * row_stride);
      for (int64_t off = 0; off < row_bytes; off += 64) {
        _mm_prefetch(reinterpret_cast<const char*>(row + static_cast<uintptr_t>(off)), _MM_HINT_T0);
      }
    }
    const bool odd = 2 * q + 1 == rows;
    for (int64_t j = 0; j < cols; j += 16) {
      const auto lanes = static_cast<__mmask16>(
          cols - j >= 16 ? 0xFFFFu : (1u << static_cast<unsigned>(cols - j)) - 1u);
      const __m256i lo = load(2 * q, j, lanes);
      const __m256i hi = odd ? _mm256_setzero_si256() : load(2 * q + 1, j, lanes);
      _mm512_mask_storeu_epi32(dst + q * ldd + j, lanes, interleave(lo, hi));
    }
  }
}

}  // namespace

namespace detail {

TERN_V4_BF16 void small_gemm_bf16_v4(bool trans_a, int64_t m, int64_t n, int64_t kp, float alpha,
                                     const uint32_t* a, int64_t lda, const uint32_t* b, int64_t ldb,
                                     float* c, int64_t ldc) {
  if (trans_a) {
    gemm<true, false>(m, n, kp, alpha, a, lda, b, ldb, c, ldc);
  } else {
    gemm<false, false>(m, n, kp, alpha, a, lda, b, ldb, c, ldc);
  }
}

TERN_V4_BF16 void small_gemm_bf16_acc_v4(int64_t m, int64_t n, int64_t kp, const uint32_t* a,
                                         int64_t lda, const uint32_t* b, int64_t ldb, float* c,
                                         int64_t ldc) {
  gemm<true, true>(m, n, kp, 1.0f, a, lda, b, ldb, c, ldc);
}

TERN_V4_BF16 void pair_rows_bf16_v4(int64_t rows, int64_t cols, const bfloat16* src, int64_t lds,
                                    uint32_t* dst, int64_t ldd) {
  pair_rows(
      rows, cols,
      [&](int64_t r, int64_t j, __mmask16 lanes) {
        return _mm256_maskz_loadu_epi16(lanes, src + r * lds + j);
      },
      reinterpret_cast<uintptr_t>(src), lds * 2, cols * 2, dst, ldd);
}

TERN_V4_BF16 void pair_rows_f32_v4(int64_t rows, int64_t cols, const float* src, int64_t lds,
                                   uint32_t* dst, int64_t ldd) {
  pair_rows(
      rows, cols,
      [&](int64_t r, int64_t j, __mmask16 lanes) { return round16(src + r * lds + j, lanes); },
      reinterpret_cast<uintptr_t>(src), lds * 4, cols * 4, dst, ldd);
}

TERN_V4_BF16 void round_rows_f32_v4(int64_t rows, int64_t cols, const float* src, int64_t lds,
                                    bfloat16* dst, int64_t ldd) {
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t j = 0; j < cols; j += 16) {
      const auto lanes = static_cast<__mmask16>(
          cols - j >= 16 ? 0xFFFFu : (1u << static_cast<unsigned>(cols - j)) - 1u);
      _mm256_mask_storeu_epi16(dst + r * ldd + j, lanes, round16(src + r * lds + j, lanes));
    }
  }
}

}  // namespace detail

bool small_gemm_bf16_available() {
  static const bool ok = cpu_runs_v4_variants() && __builtin_cpu_supports("avx512bf16");
  return ok;
}

void small_gemm_bf16(bool trans_a, int64_t m, int64_t n, int64_t kp, float alpha, const uint32_t* a,
                     int64_t lda, const uint32_t* b, int64_t ldb, float* c, int64_t ldc) {
  TERN_CHECK(small_gemm_bf16_available(), "small_gemm_bf16 needs AVX512_BF16");
  TERN_CHECK(m >= 0 && n >= 0 && kp >= 0, "small_gemm_bf16 ", m, "x", n, "x", kp, " pairs");
  TERN_CHECK(lda >= (trans_a ? m : kp) && ldb >= n && ldc >= n, "small_gemm_bf16 leading dims ",
             lda, " ", ldb, " ", ldc);
  detail::small_gemm_bf16_v4(trans_a, m, n, kp, alpha, a, lda, b, ldb, c, ldc);
}

void small_gemm_bf16_acc(int64_t m, int64_t n, int64_t kp, const uint32_t* a, int64_t lda,
                         const uint32_t* b, int64_t ldb, float* c, int64_t ldc) {
  TERN_CHECK(small_gemm_bf16_available(), "small_gemm_bf16_acc needs AVX512_BF16");
  TERN_CHECK(m >= 0 && n >= 0 && kp >= 0 && lda >= m && ldb >= n && ldc >= n,
             "small_gemm_bf16_acc ", m, "x", n, "x", kp, " pairs, leading dims ", lda, " ", ldb,
             " ", ldc);
  detail::small_gemm_bf16_acc_v4(m, n, kp, a, lda, b, ldb, c, ldc);
}

void pair_rows_bf16(int64_t rows, int64_t cols, const bfloat16* src, int64_t lds, uint32_t* dst,
                    int64_t ldd) {
  TERN_CHECK(small_gemm_bf16_available() && lds >= cols && ldd >= cols, "pair_rows_bf16");
  detail::pair_rows_bf16_v4(rows, cols, src, lds, dst, ldd);
}

void pair_rows_f32(int64_t rows, int64_t cols, const float* src, int64_t lds, uint32_t* dst,
                   int64_t ldd) {
  TERN_CHECK(small_gemm_bf16_available() && lds >= cols && ldd >= cols, "pair_rows_f32");
  detail::pair_rows_f32_v4(rows, cols, src, lds, dst, ldd);
}

void round_rows_f32(int64_t rows, int64_t cols, const float* src, int64_t lds, bfloat16* dst,
                    int64_t ldd) {
  TERN_CHECK(small_gemm_bf16_available() && lds >= cols && ldd >= cols, "round_rows_f32");
  detail::round_rows_f32_v4(rows, cols, src, lds, dst, ldd);
}

#undef TERN_V4_BF16

}  // namespace tern::cpu

TERN_CPU_V3_END
