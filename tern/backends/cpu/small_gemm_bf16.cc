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
#include <type_traits>

#include "tern/backends/cpu/cpu_backend.h"
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

// Where a tile's results go. F32Out: C = alpha * A B, or with kAcc C += A B (alpha 1).
struct F32Out {
  float* c;
  int64_t ldc;
  float alpha;

  F32Out at(int64_t i, int64_t j) const { return {c + i * ldc + j, ldc, alpha}; }
  template <bool kMasked>
  TERN_V4_BF16 __m512 load(int r, int col, __mmask16 lanes) const {
    return kMasked ? _mm512_maskz_loadu_ps(lanes, c + r * ldc + col)
                   : _mm512_loadu_ps(c + r * ldc + col);
  }
  template <bool kMasked>
  TERN_V4_BF16 void store(int r, int col, __m512 v, __mmask16 lanes) const {
    v = _mm512_mul_ps(v, _mm512_set1_ps(alpha));
    if (kMasked) {
      _mm512_mask_storeu_ps(c + r * ldc + col, lanes, v);
    } else {
      _mm512_storeu_ps(c + r * ldc + col, v);
    }
  }
};

// 16 bf16 values widened to f32.
TERN_V4_BF16 inline __m512 widen16(__m256i bits) {
  return _mm512_castsi512_ps(
      _mm512_maskz_slli_epi32(kAll16, _mm512_maskz_cvtepu16_epi32(kAll16, bits), 16));
}

// C = A B + bias (per column; none when null), T = float, or bfloat16 rounded to nearest even;
// Bias = float or bfloat16.
template <typename T, typename Bias>
struct BiasOut {
  T* c;
  int64_t ldc;
  const Bias* bias;

  BiasOut at(int64_t i, int64_t j) const {
    return {c + i * ldc + j, ldc, bias == nullptr ? nullptr : bias + j};
  }
  template <bool kMasked>
  TERN_V4_BF16 __m512 load(int, int, __mmask16) const {
    return _mm512_setzero_ps();  // never accumulates
  }
  template <bool kMasked>
  TERN_V4_BF16 void store(int r, int col, __m512 v, __mmask16 lanes) const {
    if (bias != nullptr) {
      if constexpr (std::is_same_v<Bias, float>) {
        v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(lanes, bias + col));
      } else {
        v = _mm512_add_ps(v, widen16(_mm256_maskz_loadu_epi16(lanes, bias + col)));
      }
    }
    T* dst = c + r * ldc + col;
    if constexpr (std::is_same_v<T, float>) {
      if (kMasked) {
        _mm512_mask_storeu_ps(dst, lanes, v);
      } else {
        _mm512_storeu_ps(dst, v);
      }
    } else {
      const auto bits = (__m256i)_mm512_cvtneps_pbh(v);
      if (kMasked) {
        _mm256_mask_storeu_epi16(dst, lanes, bits);
      } else {
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst), bits);
      }
    }
  }
};

// C[MR rows, NV * 16 columns] = A B over kp pairs, into `out` (its view at the tile's corner); a:
// A's word (0, 0) (trans_a: words of one pair row are A's rows), b: B's pair row 0. With kMasked,
// the last vector's columns `last`. With kAcc, the tile starts from out's values.
template <int MR, int NV, bool kTransA, bool kMasked, bool kAcc, typename Out>
TERN_V4_BF16 inline void tile(int64_t kp, const uint32_t* a, int64_t lda, const uint32_t* b,
                              int64_t ldb, const Out& out, __mmask16 last) {
  __m512 acc[MR][NV];
#pragma GCC unroll 32
  for (int r = 0; r < MR; ++r) {
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v) {
      if constexpr (!kAcc) {
        acc[r][v] = _mm512_setzero_ps();
      } else if (kMasked && v == NV - 1) {
        acc[r][v] = out.template load<true>(r, 16 * v, last);
      } else {
        acc[r][v] = out.template load<false>(r, 16 * v, kAll16);
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
#pragma GCC unroll 32
  for (int r = 0; r < MR; ++r) {
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v) {
      if (kMasked && v == NV - 1) {
        out.template store<true>(r, 16 * v, acc[r][v], last);
      } else {
        out.template store<false>(r, 16 * v, acc[r][v], kAll16);
      }
    }
  }
}

// The last rows (< kMr) of a column block: tile with MR = rows.
template <int MR, int NV, bool kTransA, bool kMasked, bool kAcc, typename Out>
TERN_V4_BF16 void row_tail(int rows, int64_t kp, const uint32_t* a, int64_t lda, const uint32_t* b,
                           int64_t ldb, const Out& out, __mmask16 last) {
  if constexpr (MR > 1) {
    if (rows < MR) {
      return row_tail<MR - 1, NV, kTransA, kMasked, kAcc>(rows, kp, a, lda, b, ldb, out, last);
    }
  }
  tile<MR, NV, kTransA, kMasked, kAcc>(kp, a, lda, b, ldb, out, last);
}

// C's column block [0, NV * 16), all m rows.
template <int NV, bool kTransA, bool kMasked, bool kAcc, typename Out>
TERN_V4_BF16 void column_block(int64_t m, int64_t kp, const uint32_t* a, int64_t lda,
                               const uint32_t* b, int64_t ldb, const Out& out, __mmask16 last) {
  const int64_t a_row = kTransA ? 1 : lda;
  int64_t i = 0;
  for (; i + kMr <= m; i += kMr) {
    tile<kMr, NV, kTransA, kMasked, kAcc>(kp, a + i * a_row, lda, b, ldb, out.at(i, 0), last);
  }
  if (i < m) {
    row_tail<kMr - 1, NV, kTransA, kMasked, kAcc>(static_cast<int>(m - i), kp, a + i * a_row, lda,
                                                  b, ldb, out.at(i, 0), last);
  }
}

// The last columns (< 16 kNv): NV = their vector count, the last one masked.
template <int NV, bool kTransA, bool kAcc, typename Out>
TERN_V4_BF16 void column_tail(int vectors, int64_t m, int64_t kp, const uint32_t* a, int64_t lda,
                              const uint32_t* b, int64_t ldb, const Out& out, __mmask16 last) {
  if constexpr (NV > 1) {
    if (vectors < NV) {
      return column_tail<NV - 1, kTransA, kAcc>(vectors, m, kp, a, lda, b, ldb, out, last);
    }
  }
  column_block<NV, kTransA, true, kAcc>(m, kp, a, lda, b, ldb, out, last);
}

template <bool kTransA, bool kAcc, typename Out>
TERN_V4_BF16 void gemm(int64_t m, int64_t n, int64_t kp, const uint32_t* a, int64_t lda,
                       const uint32_t* b, int64_t ldb, const Out& out) {
  constexpr int64_t kNr = 16 * kNv;
  int64_t j = 0;
  for (; j + kNr <= n; j += kNr) {
    column_block<kNv, kTransA, false, kAcc>(m, kp, a, lda, b + j, ldb, out.at(0, j), kAll16);
  }
  if (j < n) {
    const int vectors = static_cast<int>((n - j + 15) / 16);
    const int lanes = static_cast<int>(n - j) - 16 * (vectors - 1);  // in [1, 16]
    const auto last = static_cast<__mmask16>((1u << lanes) - 1u);
    column_tail<kNv, kTransA, kAcc>(vectors, m, kp, a, lda, b + j, ldb, out.at(0, j), last);
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

// Prefetches rows 2q + kPrefetchRows and the one after: row r's row_bytes bytes start at
// src + r * row_stride (an address past the tensor is only prefetched, never read: prefetches do
// not fault).
TERN_V4_BF16 inline void prefetch_pair_ahead(int64_t q, uintptr_t src, int64_t row_stride,
                                             int64_t row_bytes) {
  for (int64_t r = 2 * q + kPrefetchRows; r < 2 * q + kPrefetchRows + 2; ++r) {
    const uintptr_t row = src + static_cast<uintptr_t>(r * row_stride);
    for (int64_t off = 0; off < row_bytes; off += 64) {
      _mm_prefetch(reinterpret_cast<const char*>(row + static_cast<uintptr_t>(off)), _MM_HINT_T0);
    }
  }
}

// dst[q * ldd + j] = (row 2q, row 2q + 1) of column j for q < ceil(rows / 2); `load(r, j, lanes)`
// gives row r's 16 bf16 values from column j (the lanes set); a missing last row pairs with 0.
// Row r's bytes start at src + r * row_stride and span row_bytes (prefetch_pair_ahead).
template <typename Load>
TERN_V4_BF16 inline void pair_rows(int64_t rows, int64_t cols, Load load, uintptr_t src,
                                   int64_t row_stride, int64_t row_bytes, uint32_t* dst,
                                   int64_t ldd) {
  for (int64_t q = 0; 2 * q < rows; ++q) {
    prefetch_pair_ahead(q, src, row_stride, row_bytes);
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
  const F32Out out{c, ldc, alpha};
  if (trans_a) {
    gemm<true, false>(m, n, kp, a, lda, b, ldb, out);
  } else {
    gemm<false, false>(m, n, kp, a, lda, b, ldb, out);
  }
}

TERN_V4_BF16 void small_gemm_bf16_acc_v4(int64_t m, int64_t n, int64_t kp, const uint32_t* a,
                                         int64_t lda, const uint32_t* b, int64_t ldb, float* c,
                                         int64_t ldc) {
  gemm<true, true>(m, n, kp, a, lda, b, ldb, F32Out{c, ldc, 1.0f});
}

// One instantiation per (result, bias) type pair.
template <typename T>
TERN_V4_BF16 void gemm_bias(int64_t m, int64_t n, int64_t kp, const uint32_t* a, int64_t lda,
                            const uint32_t* b, int64_t ldb, T* c, int64_t ldc, const void* bias,
                            DType bias_dtype) {
  if (bias_dtype == DType::kBF16) {
    gemm<false, false>(m, n, kp, a, lda, b, ldb,
                       BiasOut<T, bfloat16>{c, ldc, static_cast<const bfloat16*>(bias)});
  } else {
    gemm<false, false>(m, n, kp, a, lda, b, ldb,
                       BiasOut<T, float>{c, ldc, static_cast<const float*>(bias)});
  }
}

TERN_V4_BF16 void small_gemm_bf16_bias_v4(int64_t m, int64_t n, int64_t kp, const uint32_t* a,
                                          int64_t lda, const uint32_t* b, int64_t ldb, void* c,
                                          DType c_dtype, int64_t ldc, const void* bias,
                                          DType bias_dtype) {
  if (bias == nullptr) bias_dtype = DType::kF32;
  if (c_dtype == DType::kBF16) {
    gemm_bias(m, n, kp, a, lda, b, ldb, static_cast<bfloat16*>(c), ldc, bias, bias_dtype);
  } else {
    gemm_bias(m, n, kp, a, lda, b, ldb, static_cast<float*>(c), ldc, bias, bias_dtype);
  }
}

// Columns in whole groups of 32 take two 64-byte loads and two word permutes per pair of rows
// (twice the columns of the generic loop's step); the rest go through pair_rows.
TERN_V4_BF16 void pair_rows_bf16_v4(int64_t rows, int64_t cols, const bfloat16* src, int64_t lds,
                                    uint32_t* dst, int64_t ldd) {
  const int64_t whole = cols / 32 * 32;
  if (whole > 0) {
    alignas(64) uint16_t lo_words[32], hi_words[32];
    for (int w = 0; w < 16; ++w) {  // word w: column w (or 16 + w) of row 2q, then of row 2q + 1
      lo_words[2 * w] = static_cast<uint16_t>(w);
      lo_words[2 * w + 1] = static_cast<uint16_t>(32 + w);
      hi_words[2 * w] = static_cast<uint16_t>(16 + w);
      hi_words[2 * w + 1] = static_cast<uint16_t>(48 + w);
    }
    const __m512i lo_idx = _mm512_load_si512(lo_words), hi_idx = _mm512_load_si512(hi_words);
    const auto base = reinterpret_cast<uintptr_t>(src);
    for (int64_t q = 0; 2 * q < rows; ++q) {
      prefetch_pair_ahead(q, base, lds * 2, whole * 2);
      const bfloat16* r0 = src + 2 * q * lds;
      const bool odd = 2 * q + 1 == rows;
      uint32_t* out = dst + q * ldd;
      for (int64_t j = 0; j < whole; j += 32) {
        const __m512i a = _mm512_loadu_si512(r0 + j);
        const __m512i b = odd ? _mm512_setzero_si512() : _mm512_loadu_si512(r0 + lds + j);
        _mm512_storeu_si512(out + j, _mm512_permutex2var_epi16(a, lo_idx, b));
        _mm512_storeu_si512(out + j + 16, _mm512_permutex2var_epi16(a, hi_idx, b));
      }
    }
  }
  if (whole == cols) return;
  const bfloat16* rest = src + whole;
  pair_rows(
      rows, cols - whole,
      [&](int64_t r, int64_t j, __mmask16 lanes) {
        return _mm256_maskz_loadu_epi16(lanes, rest + r * lds + j);
      },
      reinterpret_cast<uintptr_t>(rest), lds * 2, (cols - whole) * 2, dst + whole, ldd);
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

bool bf16_products_native() {
  static const bool on =
      small_gemm_bf16_available() && cpu_is_amd() && !bf16_contractions_widened();
  return on;
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

void small_gemm_bf16_bias(int64_t m, int64_t n, int64_t kp, const uint32_t* a, int64_t lda,
                          const uint32_t* b, int64_t ldb, void* c, DType c_dtype, int64_t ldc,
                          const void* bias, DType bias_dtype) {
  TERN_CHECK(small_gemm_bf16_available(), "small_gemm_bf16_bias needs AVX512_BF16");
  TERN_CHECK(m >= 0 && n >= 0 && kp >= 0 && lda >= kp && ldb >= n && ldc >= n,
             "small_gemm_bf16_bias ", m, "x", n, "x", kp, " pairs, leading dims ", lda, " ", ldb,
             " ", ldc);
  TERN_CHECK((c_dtype == DType::kF32 || c_dtype == DType::kBF16) &&
                 (bias == nullptr || bias_dtype == DType::kF32 || bias_dtype == DType::kBF16),
             "small_gemm_bf16_bias: result ", dtype_name(c_dtype), ", bias ",
             dtype_name(bias_dtype));
  detail::small_gemm_bf16_bias_v4(m, n, kp, a, lda, b, ldb, c, c_dtype, ldc, bias, bias_dtype);
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
