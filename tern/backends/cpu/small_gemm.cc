// small_gemm, small_gemm_acc, small_gemm_bias and transpose_f32 (small_gemm.h): the per-head
// products of attention, the fused Winograd blocks' products and cpu_matmul_f32's row blocks, one
// thread. small_gemm_acc is the same tiles loading C into the accumulators instead of zeros (and
// storing them unscaled); small_gemm_bias adds a bias row as the tiles are stored.
//
// AVX-512 (x86-64-v4, chosen at run time): C is cut into 6 x 64 tiles whose 24 accumulators stay
// in zmm registers over the whole k loop; each k step loads 4 vectors of one B row and broadcasts
// op(A)'s 6 elements of that column (contiguous with trans_a): 24 FMAs. Column blocks are the
// outer loop, so a k x 64 panel of B stays in L1 while the row tiles go by. Tails: masked
// loads/stores for the last columns, a smaller row count as a template argument. 155-170 GFLOP/s
// on one Emerald Rapids core at 128x128x64 and 128x64x128 (its FMA peak: 179). No packing (not
// tried): at these sizes A and B stay L1/L2 resident and the tiles already run near that peak.
// On one Zen 5 core (hot): 258-266 GFLOP/s at those shapes and 120x128x256, trans_a 243.
// The x86-64-v3 build: the same idea in 6 x 16 AVX2 tiles, the edges in plain loops (45-70
// GFLOP/s on the same core, whose ymm FMA peak is 82). transpose_f32: 16 x 16 register
// transposes on AVX-512; on x86-64-v3 the transpose kernel's 8 x 8 tiles (transpose_vec.cc).
#include "tern/backends/cpu/small_gemm.h"

#include <immintrin.h>

#include <algorithm>

#include "tern/backends/cpu/cpu_isa.h"
#include "tern/base/error.h"

TERN_CPU_V3_BEGIN  // the code below is x86-64-v3 (cpu_isa.h)

namespace tern::cpu {
namespace {

// The AVX-512 functions (the rest of the file is x86-64-v3); #undef at the end of the file.
#define TERN_V4 __attribute__((target("arch=x86-64-v4")))

// --- AVX-512 (x86-64-v4) ---

// Rows of a C tile and zmm vectors (16 columns each) of its rows: 24 accumulators, 4 of B, 1
// broadcast. Also measured: 8x32, 12x32, 14x32, 8x48 and 4x64 (up to 8% slower on one of the
// attention shapes each), 16x16 and 28x16 (up to 25% slower).
constexpr int kMr = 6;
constexpr int kNv = 4;

// The tile C[rows MR, columns NV * 16] = alpha * op(A) B (kAcc: C += op(A) B, alpha unused) from
// a = op(A)'s (0, 0) and b = B's (0, 0); with kMasked the last vector's columns are those of
// `last`. MR * NV + NV + 1 zmm.
template <int MR, int NV, bool kTransA, bool kMasked, bool kAcc>
TERN_V4 inline void tile_v4(int64_t k, float alpha, const float* a, int64_t lda, const float* b,
                            int64_t ldb, float* c, int64_t ldc, __mmask16 last, const float* bias) {
  __m512 acc[MR][NV];
#pragma GCC unroll 32
  for (int r = 0; r < MR; ++r) {
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v) {
      if constexpr (kAcc) {
        const float* cr = c + r * ldc + 16 * v;
        acc[r][v] = kMasked && v == NV - 1 ? _mm512_maskz_loadu_ps(last, cr) : _mm512_loadu_ps(cr);
      } else {
        acc[r][v] = _mm512_setzero_ps();
      }
    }
  }
  for (int64_t p = 0; p < k; ++p) {
    const float* bp = b + p * ldb;
    __m512 bv[NV];
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v) {
      bv[v] = kMasked && v == NV - 1 ? _mm512_maskz_loadu_ps(last, bp + 16 * v)
                                     : _mm512_loadu_ps(bp + 16 * v);
    }
#pragma GCC unroll 32
    for (int r = 0; r < MR; ++r) {
      const __m512 ar = _mm512_set1_ps(kTransA ? a[p * lda + r] : a[r * lda + p]);
#pragma GCC unroll 8
      for (int v = 0; v < NV; ++v) acc[r][v] = _mm512_fmadd_ps(ar, bv[v], acc[r][v]);
    }
  }
  const __m512 al = _mm512_set1_ps(alpha);
  __m512 bv[NV];  // the bias's columns (zeros without one)
#pragma GCC unroll 8
  for (int v = 0; v < NV; ++v) {
    bv[v] = !bias                    ? _mm512_setzero_ps()
            : kMasked && v == NV - 1 ? _mm512_maskz_loadu_ps(last, bias + 16 * v)
                                     : _mm512_loadu_ps(bias + 16 * v);
  }
#pragma GCC unroll 32
  for (int r = 0; r < MR; ++r) {
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v) {
      float* cr = c + r * ldc + 16 * v;
      const __m512 out = kAcc   ? acc[r][v]
                         : bias ? _mm512_fmadd_ps(acc[r][v], al, bv[v])
                                : _mm512_mul_ps(acc[r][v], al);
      if (kMasked && v == NV - 1) {
        _mm512_mask_storeu_ps(cr, last, out);
      } else {
        _mm512_storeu_ps(cr, out);
      }
    }
  }
}

// The last rows (< kMr) of a column block: tile_v4 with MR = rows.
template <int MR, int NV, bool kTransA, bool kMasked, bool kAcc>
TERN_V4 void row_tail_v4(int rows, int64_t k, float alpha, const float* a, int64_t lda,
                         const float* b, int64_t ldb, float* c, int64_t ldc, __mmask16 last,
                         const float* bias) {
  if constexpr (MR > 1) {
    if (rows < MR) {
      return row_tail_v4<MR - 1, NV, kTransA, kMasked, kAcc>(rows, k, alpha, a, lda, b, ldb, c, ldc,
                                                             last, bias);
    }
  }
  tile_v4<MR, NV, kTransA, kMasked, kAcc>(k, alpha, a, lda, b, ldb, c, ldc, last, bias);
}

// C's column block [0, NV * 16) (the last vector's columns `last` with kMasked), all m rows.
template <int NV, bool kTransA, bool kMasked, bool kAcc>
TERN_V4 void column_block_v4(int64_t m, int64_t k, float alpha, const float* a, int64_t lda,
                             const float* b, int64_t ldb, float* c, int64_t ldc, __mmask16 last,
                             const float* bias) {
  const int64_t a_row = kTransA ? 1 : lda;  // a's step between rows of op(A)
  int64_t i = 0;
  for (; i + kMr <= m; i += kMr) {
    tile_v4<kMr, NV, kTransA, kMasked, kAcc>(k, alpha, a + i * a_row, lda, b, ldb, c + i * ldc, ldc,
                                             last, bias);
  }
  if (i < m) {
    row_tail_v4<kMr - 1, NV, kTransA, kMasked, kAcc>(static_cast<int>(m - i), k, alpha,
                                                     a + i * a_row, lda, b, ldb, c + i * ldc, ldc,
                                                     last, bias);
  }
}

// The last columns (< 16 kNv): NV = their vector count, the last one masked.
template <int NV, bool kTransA, bool kAcc>
TERN_V4 void column_tail_v4(int vectors, int64_t m, int64_t k, float alpha, const float* a,
                            int64_t lda, const float* b, int64_t ldb, float* c, int64_t ldc,
                            __mmask16 last, const float* bias) {
  if constexpr (NV > 1) {
    if (vectors < NV) {
      return column_tail_v4<NV - 1, kTransA, kAcc>(vectors, m, k, alpha, a, lda, b, ldb, c, ldc,
                                                   last, bias);
    }
  }
  column_block_v4<NV, kTransA, true, kAcc>(m, k, alpha, a, lda, b, ldb, c, ldc, last, bias);
}

// bias: null, or n values added to every row of C (not with kAcc).
template <bool kTransA, bool kAcc>
TERN_V4 void gemm_v4(int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
                     const float* b, int64_t ldb, float* c, int64_t ldc,
                     const float* bias = nullptr) {
  constexpr int64_t kNr = 16 * kNv;
  int64_t j = 0;
  for (; j + kNr <= n; j += kNr) {
    column_block_v4<kNv, kTransA, false, kAcc>(m, k, alpha, a, lda, b + j, ldb, c + j, ldc, 0xFFFF,
                                               bias ? bias + j : nullptr);
  }
  if (j < n) {
    const int vectors = static_cast<int>((n - j + 15) / 16);
    const int lanes = static_cast<int>(n - j) - 16 * (vectors - 1);  // in [1, 16]
    const auto last = static_cast<__mmask16>((1u << lanes) - 1u);
    column_tail_v4<kNv, kTransA, kAcc>(vectors, m, k, alpha, a, lda, b + j, ldb, c + j, ldc, last,
                                       bias ? bias + j : nullptr);
  }
}

// --- x86-64-v3 (AVX2): 6 x 16 tiles, the edges in plain loops ---

constexpr int kMrV3 = 6;   // 12 ymm accumulators, 2 of B, 1 broadcast
constexpr int kNrV3 = 16;  // two ymm

// C = alpha op(A) B (accumulate: C += op(A) B) by plain loops (the edges the tiles leave): one
// row of C at a time, accumulated in C over k; GCC vectorizes the j loop.
void gemm_loops_v3(bool trans_a, bool accumulate, int64_t m, int64_t n, int64_t k, float alpha,
                   const float* a, int64_t lda, const float* b, int64_t ldb, float* c,
                   int64_t ldc) {
  if (accumulate) alpha = 1.0f;
  for (int64_t i = 0; i < m; ++i) {
    float* ci = c + i * ldc;
    if (!accumulate) std::fill(ci, ci + n, 0.0f);
    for (int64_t p = 0; p < k; ++p) {
      const float aip = trans_a ? a[p * lda + i] : a[i * lda + p];
      const float* bp = b + p * ldb;
#pragma omp simd
      for (int64_t j = 0; j < n; ++j) ci[j] += aip * bp[j];
    }
#pragma omp simd
    for (int64_t j = 0; j < n; ++j) ci[j] *= alpha;
  }
}

// tile_v4's loop in ymm registers, for a full kMrV3 x kNrV3 tile.
template <bool kTransA, bool kAcc>
void tile_v3(int64_t k, float alpha, const float* a, int64_t lda, const float* b, int64_t ldb,
             float* c, int64_t ldc) {
  __m256 acc[kMrV3][2];
#pragma GCC unroll 8
  for (int r = 0; r < kMrV3; ++r) {
    acc[r][0] = kAcc ? _mm256_loadu_ps(c + r * ldc) : _mm256_setzero_ps();
    acc[r][1] = kAcc ? _mm256_loadu_ps(c + r * ldc + 8) : _mm256_setzero_ps();
  }
  for (int64_t p = 0; p < k; ++p) {
    const __m256 b0 = _mm256_loadu_ps(b + p * ldb), b1 = _mm256_loadu_ps(b + p * ldb + 8);
#pragma GCC unroll 8
    for (int r = 0; r < kMrV3; ++r) {
      const __m256 ar = _mm256_set1_ps(kTransA ? a[p * lda + r] : a[r * lda + p]);
      acc[r][0] = _mm256_fmadd_ps(ar, b0, acc[r][0]);
      acc[r][1] = _mm256_fmadd_ps(ar, b1, acc[r][1]);
    }
  }
  const __m256 al = _mm256_set1_ps(alpha);
#pragma GCC unroll 8
  for (int r = 0; r < kMrV3; ++r) {
    _mm256_storeu_ps(c + r * ldc, kAcc ? acc[r][0] : _mm256_mul_ps(acc[r][0], al));
    _mm256_storeu_ps(c + r * ldc + 8, kAcc ? acc[r][1] : _mm256_mul_ps(acc[r][1], al));
  }
}

template <bool kTransA, bool kAcc>
void gemm_v3(int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
             const float* b, int64_t ldb, float* c, int64_t ldc) {
  const int64_t a_row = kTransA ? 1 : lda;
  const int64_t m_tiled = m / kMrV3 * kMrV3, n_tiled = n / kNrV3 * kNrV3;
  for (int64_t j = 0; j < n_tiled; j += kNrV3) {
    for (int64_t i = 0; i < m_tiled; i += kMrV3) {
      tile_v3<kTransA, kAcc>(k, alpha, a + i * a_row, lda, b + j, ldb, c + i * ldc + j, ldc);
    }
  }
  // The right strip (all rows), then the bottom one (the tiled columns).
  gemm_loops_v3(kTransA, kAcc, m, n - n_tiled, k, alpha, a, lda, b + n_tiled, ldb, c + n_tiled,
                ldc);
  gemm_loops_v3(kTransA, kAcc, m - m_tiled, n_tiled, k, alpha, a + m_tiled * a_row, lda, b, ldb,
                c + m_tiled * ldc, ldc);
}

// --- transposes ---

// Rows i < rows, columns j < cols of a block of at most 16 x 16, through one register transpose
// (masked loads and stores for a partial block).
TERN_V4 void transpose_block_v4(int rows, int cols, const float* src, int64_t lds, float* dst,
                                int64_t ldd) {
  const auto col_mask = static_cast<__mmask16>((1u << cols) - 1u);
  const auto row_mask = static_cast<__mmask16>((1u << rows) - 1u);
  __m512 r[16], t[16];
#pragma GCC unroll 16
  for (int i = 0; i < 16; ++i) {
    r[i] = i < rows ? _mm512_maskz_loadu_ps(col_mask, src + i * lds) : _mm512_setzero_ps();
  }
  // The maskz forms with every lane on are the plain instructions; the plain intrinsics trip GCC
  // 12's -Wmaybe-uninitialized (their _mm512_undefined_ps).
  constexpr __mmask16 kAll = 0xFFFF;
  // Within each 128-bit lane, 4x4 transposes (unpack pairs of rows, then shuffle pairs of
  // pairs): r[4g + s] then holds, in lane l, column 4l + s of rows 4g..4g+3.
#pragma GCC unroll 8
  for (int i = 0; i < 16; i += 2) {
    t[i] = _mm512_maskz_unpacklo_ps(kAll, r[i], r[i + 1]);
    t[i + 1] = _mm512_maskz_unpackhi_ps(kAll, r[i], r[i + 1]);
  }
#pragma GCC unroll 4
  for (int i = 0; i < 16; i += 4) {
    r[i] = _mm512_maskz_shuffle_ps(kAll, t[i], t[i + 2], _MM_SHUFFLE(1, 0, 1, 0));
    r[i + 1] = _mm512_maskz_shuffle_ps(kAll, t[i], t[i + 2], _MM_SHUFFLE(3, 2, 3, 2));
    r[i + 2] = _mm512_maskz_shuffle_ps(kAll, t[i + 1], t[i + 3], _MM_SHUFFLE(1, 0, 1, 0));
    r[i + 3] = _mm512_maskz_shuffle_ps(kAll, t[i + 1], t[i + 3], _MM_SHUFFLE(3, 2, 3, 2));
  }
  // Then the lanes themselves, a 4x4 transpose of r[s], r[4 + s], r[8 + s], r[12 + s] in two
  // rounds of shuffle_f32x4 (0x88: lanes 0, 2 of each source; 0xDD: lanes 1, 3).
#pragma GCC unroll 2
  for (int h = 0; h < 16; h += 8) {
#pragma GCC unroll 4
    for (int s = 0; s < 4; ++s) {
      t[h + s] = _mm512_maskz_shuffle_f32x4(kAll, r[h + s], r[h + 4 + s], 0x88);
      t[h + 4 + s] = _mm512_maskz_shuffle_f32x4(kAll, r[h + s], r[h + 4 + s], 0xDD);
    }
  }
#pragma GCC unroll 8
  for (int s = 0; s < 8; ++s) {
    r[s] = _mm512_maskz_shuffle_f32x4(kAll, t[s], t[8 + s], 0x88);
    r[8 + s] = _mm512_maskz_shuffle_f32x4(kAll, t[s], t[8 + s], 0xDD);
  }
#pragma GCC unroll 16
  for (int j = 0; j < 16; ++j) {
    if (j < cols) _mm512_mask_storeu_ps(dst + j * ldd, row_mask, r[j]);
  }
}

void check_gemm_args(bool trans_a, int64_t m, int64_t n, int64_t k, int64_t lda, int64_t ldb,
                     int64_t ldc) {
  TERN_CHECK(m >= 0 && n >= 0 && k >= 0, "small_gemm ", m, "x", n, "x", k);
  TERN_CHECK(lda >= (trans_a ? m : k) && ldb >= n && ldc >= n, "small_gemm leading dims ", lda, " ",
             ldb, " ", ldc);
}

}  // namespace

namespace detail {

void small_gemm_v3(bool trans_a, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
                   int64_t lda, const float* b, int64_t ldb, float* c, int64_t ldc) {
  if (trans_a) {
    gemm_v3<true, false>(m, n, k, alpha, a, lda, b, ldb, c, ldc);
  } else {
    gemm_v3<false, false>(m, n, k, alpha, a, lda, b, ldb, c, ldc);
  }
}

TERN_V4 void small_gemm_v4(bool trans_a, int64_t m, int64_t n, int64_t k, float alpha,
                           const float* a, int64_t lda, const float* b, int64_t ldb, float* c,
                           int64_t ldc) {
  if (trans_a) {
    gemm_v4<true, false>(m, n, k, alpha, a, lda, b, ldb, c, ldc);
  } else {
    gemm_v4<false, false>(m, n, k, alpha, a, lda, b, ldb, c, ldc);
  }
}

TERN_V4 void small_gemm_bias_v4(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
                                const float* b, int64_t ldb, float* c, int64_t ldc,
                                const float* bias) {
  gemm_v4<false, false>(m, n, k, 1.0f, a, lda, b, ldb, c, ldc, bias);
}

void small_gemm_acc_v3(bool trans_a, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
                       const float* b, int64_t ldb, float* c, int64_t ldc) {
  if (trans_a) {
    gemm_v3<true, true>(m, n, k, 1.0f, a, lda, b, ldb, c, ldc);
  } else {
    gemm_v3<false, true>(m, n, k, 1.0f, a, lda, b, ldb, c, ldc);
  }
}

TERN_V4 void small_gemm_acc_v4(bool trans_a, int64_t m, int64_t n, int64_t k, const float* a,
                               int64_t lda, const float* b, int64_t ldb, float* c, int64_t ldc) {
  if (trans_a) {
    gemm_v4<true, true>(m, n, k, 1.0f, a, lda, b, ldb, c, ldc);
  } else {
    gemm_v4<false, true>(m, n, k, 1.0f, a, lda, b, ldb, c, ldc);
  }
}

// transpose_f32_v3 is transpose_vec.cc's: the transpose kernel's own 8x8 AVX tiles.

TERN_V4 void transpose_f32_v4(int64_t rows, int64_t cols, const float* src, int64_t lds, float* dst,
                              int64_t ldd) {
  for (int64_t i = 0; i < rows; i += 16) {
    const int rb = static_cast<int>(std::min<int64_t>(16, rows - i));
    for (int64_t j = 0; j < cols; j += 16) {
      const int cb = static_cast<int>(std::min<int64_t>(16, cols - j));
      transpose_block_v4(rb, cb, src + i * lds + j, lds, dst + j * ldd + i, ldd);
    }
  }
}

}  // namespace detail

void small_gemm(bool trans_a, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
                int64_t lda, const float* b, int64_t ldb, float* c, int64_t ldc) {
  check_gemm_args(trans_a, m, n, k, lda, ldb, ldc);
  static const bool v4 = cpu_runs_v4_variants();
  if (v4) {
    detail::small_gemm_v4(trans_a, m, n, k, alpha, a, lda, b, ldb, c, ldc);
  } else {
    detail::small_gemm_v3(trans_a, m, n, k, alpha, a, lda, b, ldb, c, ldc);
  }
}

void small_gemm_bias(int64_t m, int64_t n, int64_t k, const float* a, int64_t lda, const float* b,
                     int64_t ldb, float* c, int64_t ldc, const float* bias) {
  check_gemm_args(false, m, n, k, lda, ldb, ldc);
  static const bool v4 = cpu_runs_v4_variants();
  if (v4) return detail::small_gemm_bias_v4(m, n, k, a, lda, b, ldb, c, ldc, bias);
  detail::small_gemm_v3(false, m, n, k, 1.0f, a, lda, b, ldb, c, ldc);
  if (bias == nullptr) return;
  for (int64_t i = 0; i < m; ++i) {
    float* ci = c + i * ldc;
#pragma omp simd
    for (int64_t j = 0; j < n; ++j) ci[j] += bias[j];
  }
}

void small_gemm_acc(bool trans_a, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
                    const float* b, int64_t ldb, float* c, int64_t ldc) {
  check_gemm_args(trans_a, m, n, k, lda, ldb, ldc);
  static const bool v4 = cpu_runs_v4_variants();
  if (v4) {
    detail::small_gemm_acc_v4(trans_a, m, n, k, a, lda, b, ldb, c, ldc);
  } else {
    detail::small_gemm_acc_v3(trans_a, m, n, k, a, lda, b, ldb, c, ldc);
  }
}

void transpose_f32(int64_t rows, int64_t cols, const float* src, int64_t lds, float* dst,
                   int64_t ldd) {
  TERN_CHECK(rows >= 0 && cols >= 0 && lds >= cols && ldd >= rows, "transpose_f32 ", rows, "x",
             cols, " ", lds, " ", ldd);
  static const bool v4 = cpu_runs_v4_variants();
  if (v4) {
    detail::transpose_f32_v4(rows, cols, src, lds, dst, ldd);
  } else {
    detail::transpose_f32_v3(rows, cols, src, lds, dst, ldd);
  }
}

#undef TERN_V4

}  // namespace tern::cpu

TERN_CPU_V3_END
