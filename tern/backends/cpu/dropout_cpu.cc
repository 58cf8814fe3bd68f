// Fast kernels for dropout / dropout_apply (f32, f64, bf16 scaled in f32). Same mask as the
// reference (word i % 4 of Philox(seed)(i / 4, offset) >= rate * 2^32) but one Philox block per
// four elements instead of one per element, sixteen blocks at a time across SIMD lanes (AVX-512
// where the CPU has it), and tiles spread over OpenMP threads. dropout packs the mask (two i32
// words per 64-element tile) into its second output and scales x by those bits; dropout_apply
// scales by the same bits through the same loop, so dropout's gradient is bit for bit the mask
// dropout drew. Every element is independent, so results are bitwise equal to ref for any thread
// count.
#include <omp.h>
#include <algorithm>
#include <bit>
#include <cmath>
#include <type_traits>

#include <immintrin.h>

#include "tern/backends/cpu/cpu_isa.h"
#include "tern/backends/cpu/cpu_kernels.h"
#include "tern/backends/cpu/dropout_loops.h"

TERN_CPU_V3_BEGIN  // the code below is x86-64-v3 (cpu_isa.h)

namespace tern::cpu {
namespace {

using kernels::KernelContext;

constexpr int64_t kLanes = 16;         // Philox blocks per tile
constexpr int64_t kTile = 4 * kLanes;  // elements per tile
// Elements below which one thread runs: [128, 256] (32k, W2's second dropout) takes 28 us on two
// threads against 45 us on one.
constexpr int64_t kParallelThreshold = 1 << 14;

// Philox4x32-10 (tern/base/philox.cc) for counters (block0 + l, offset), l in [0, kLanes);
// word k of lane l lands in out[4 * l + k], i.e. in element order. Inlined into the two
// entry points below, so it is compiled for x86-64-v3 and for x86-64-v4.
[[gnu::always_inline]] inline void philox_tile_body(uint64_t seed, uint64_t block0, uint64_t offset,
                                                    uint32_t* __restrict out) {
  uint32_t c0[kLanes], c1[kLanes], c2[kLanes], c3[kLanes];
  for (int64_t l = 0; l < kLanes; ++l) {
    uint64_t b = block0 + static_cast<uint64_t>(l);
    c0[l] = static_cast<uint32_t>(b);
    c1[l] = static_cast<uint32_t>(b >> 32);
    c2[l] = static_cast<uint32_t>(offset);
    c3[l] = static_cast<uint32_t>(offset >> 32);
  }
  uint32_t k0 = static_cast<uint32_t>(seed), k1 = static_cast<uint32_t>(seed >> 32);
  for (int round = 0; round < 10; ++round) {
#pragma omp simd
    for (int64_t l = 0; l < kLanes; ++l) {
      uint64_t p0 = static_cast<uint64_t>(0xD2511F53u) * c0[l];
      uint64_t p1 = static_cast<uint64_t>(0xCD9E8D57u) * c2[l];
      uint32_t n0 = static_cast<uint32_t>(p1 >> 32) ^ c1[l] ^ k0;
      uint32_t n2 = static_cast<uint32_t>(p0 >> 32) ^ c3[l] ^ k1;
      c1[l] = static_cast<uint32_t>(p1);
      c3[l] = static_cast<uint32_t>(p0);
      c0[l] = n0;
      c2[l] = n2;
    }
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  for (int64_t l = 0; l < kLanes; ++l) {
    out[4 * l] = c0[l];
    out[4 * l + 1] = c1[l];
    out[4 * l + 2] = c2[l];
    out[4 * l + 3] = c3[l];
  }
}

// The maskz forms with every lane on are the plain instructions; the plain intrinsics trip GCC
// 12's -Wmaybe-uninitialized (their _mm512_undefined_epi32), as in small_gemm.cc.
constexpr __mmask16 kAll16 = 0xFFFF;
constexpr __mmask8 kAll8 = 0xFF;
__attribute__((target("arch=x86-64-v4"))) inline __m512i mul_epu32(__m512i a, __m512i b) {
  return _mm512_maskz_mul_epu32(kAll8, a, b);
}
__attribute__((target("arch=x86-64-v4"))) inline __m512i srli32(__m512i a) {
  return _mm512_maskz_srli_epi64(kAll8, a, 32);
}

// philox_tile_body written for AVX-512, for kTilesV4 consecutive tiles at once: the same 64
// words per tile in the same order, from one register per Philox word and tile. GCC widens the
// 32 x 32 -> 64-bit products of the loop above to vpmovzxdq + vpmullq (three uops each on this
// CPU); here each product is vpmuludq on the even lanes and on the odd lanes shifted down, and
// one vpermt2d gathers the high (or low) halves. Lane l computes block 4 (l % 4) + l / 4, so the
// 4x4 transpose within each 128-bit group (eight unpacks) leaves the words in element order:
// register j holds blocks 4j .. 4j + 3. One tile's ten rounds are a chain of dependent
// multiplies and permutes; the independent tiles interleaved fill the latency. f32 dropout of
// [4096, 256] on one thread (kernel_ab_bench): 98 ns per 64 elements with GCC's loop, 37 with
// this one tile at a time (0.47 ms), 0.30 ms with four.
constexpr int64_t kTilesV4 = 4;

__attribute__((target("arch=x86-64-v4"))) inline void philox_tiles_v4(uint64_t seed,
                                                                      uint64_t block0,
                                                                      uint64_t offset,
                                                                      uint32_t* __restrict out) {
  // Each tile's first block is a multiple of 16, so adding the lane's block never carries into
  // the high word.
  const __m512i lane_block =
      _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
  const __m512i m0 = _mm512_set1_epi64(0xD2511F53u), m1 = _mm512_set1_epi64(0xCD9E8D57u);
  const __m512i hi_idx =
      _mm512_setr_epi32(1, 17, 3, 19, 5, 21, 7, 23, 9, 25, 11, 27, 13, 29, 15, 31);
  const __m512i lo_idx =
      _mm512_setr_epi32(0, 16, 2, 18, 4, 20, 6, 22, 8, 24, 10, 26, 12, 28, 14, 30);
  __m512i c0[kTilesV4], c1[kTilesV4], c2[kTilesV4], c3[kTilesV4];
  for (int64_t t = 0; t < kTilesV4; ++t) {
    const uint64_t b = block0 + static_cast<uint64_t>(16 * t);
    c0[t] = _mm512_add_epi32(_mm512_set1_epi32(static_cast<int>(b)), lane_block);
    c1[t] = _mm512_set1_epi32(static_cast<int>(b >> 32));
    c2[t] = _mm512_set1_epi32(static_cast<int>(offset));
    c3[t] = _mm512_set1_epi32(static_cast<int>(offset >> 32));
  }
  uint32_t k0 = static_cast<uint32_t>(seed), k1 = static_cast<uint32_t>(seed >> 32);
  for (int round = 0; round < 10; ++round) {
    const __m512i key0 = _mm512_set1_epi32(static_cast<int>(k0));
    const __m512i key1 = _mm512_set1_epi32(static_cast<int>(k1));
#pragma GCC unroll 4
    for (int64_t t = 0; t < kTilesV4; ++t) {
      const __m512i p0e = mul_epu32(c0[t], m0), p0o = mul_epu32(srli32(c0[t]), m0);
      const __m512i p1e = mul_epu32(c2[t], m1), p1o = mul_epu32(srli32(c2[t]), m1);
      const __m512i n0 =
          _mm512_ternarylogic_epi32(_mm512_permutex2var_epi32(p1e, hi_idx, p1o), c1[t], key0, 0x96);
      const __m512i n2 =
          _mm512_ternarylogic_epi32(_mm512_permutex2var_epi32(p0e, hi_idx, p0o), c3[t], key1, 0x96);
      c1[t] = _mm512_permutex2var_epi32(p1e, lo_idx, p1o);
      c3[t] = _mm512_permutex2var_epi32(p0e, lo_idx, p0o);
      c0[t] = n0;
      c2[t] = n2;
    }
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
#pragma GCC unroll 4
  for (int64_t t = 0; t < kTilesV4; ++t) {
    const __m512i t0 = _mm512_maskz_unpacklo_epi32(kAll16, c0[t], c1[t]),
                  t1 = _mm512_maskz_unpacklo_epi32(kAll16, c2[t], c3[t]);
    const __m512i t2 = _mm512_maskz_unpackhi_epi32(kAll16, c0[t], c1[t]),
                  t3 = _mm512_maskz_unpackhi_epi32(kAll16, c2[t], c3[t]);
    uint32_t* o = out + kTile * t;
    _mm512_storeu_si512(o, _mm512_maskz_unpacklo_epi64(kAll8, t0, t1));
    _mm512_storeu_si512(o + 16, _mm512_maskz_unpackhi_epi64(kAll8, t0, t1));
    _mm512_storeu_si512(o + 32, _mm512_maskz_unpacklo_epi64(kAll8, t2, t3));
    _mm512_storeu_si512(o + 48, _mm512_maskz_unpackhi_epi64(kAll8, t2, t3));
  }
}

// Bit j = words[j] >= threshold, j in [0, 32): compare and movemask (a loop of shifted compares
// made dropout 2x slower; this one costs it ~10%). All 32 words exist (a tile's Philox words are
// computed past the tensor's end too).
[[gnu::always_inline]] inline uint32_t pack_v3(const uint32_t* words, uint32_t threshold) {
  const __m256i flip = _mm256_set1_epi32(INT32_MIN);  // unsigned order through signed compares
  const __m256i t = _mm256_xor_si256(_mm256_set1_epi32(static_cast<int>(threshold)), flip);
  uint32_t dropped = 0;
  for (int g = 0; g < 4; ++g) {
    const __m256i v =
        _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(words + 8 * g)), flip);
    const int m = _mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpgt_epi32(t, v)));
    dropped |= static_cast<uint32_t>(m) << (8 * g);
  }
  return ~dropped;
}

// Not always_inline (GCC checks that against dropout_tiles_body's own x86-64-v3 target):
// dropout_tiles_v4 is `flatten`, which inlines it there.
__attribute__((target("arch=x86-64-v4"))) inline uint32_t pack_v4(const uint32_t* words,
                                                                  uint32_t threshold) {
  const __m512i t = _mm512_set1_epi32(static_cast<int>(threshold));
  const uint32_t lo = _mm512_cmpge_epu32_mask(_mm512_loadu_si512(words), t);
  const uint32_t hi = _mm512_cmpge_epu32_mask(_mm512_loadu_si512(words + 16), t);
  return lo | (hi << 16);
}

// What one call of dropout needs for its tiles.
template <typename T>
struct DropoutArgs {
  using C = std::conditional_t<std::is_same_v<T, double>, double, float>;  // the compute type
  const T* x;
  T* y;
  uint32_t* mask;  // the packed mask output
  int64_t n;
  uint64_t seed, offset;
  uint32_t threshold;
  C scale;
  int64_t tile0 = 0;  // the first tile's index in the whole tensor (x, y, mask start there)
  const T* residual = nullptr;  // added to the dropped x (rounded as the two ops apart), or none
};

// Tiles [t0, t1): the Philox words, packed into the mask (bit j of word w = element
// base + 32 w + j kept, none past the end), then y = x * scale where the word is >= threshold,
// else +0.
template <typename T, bool kV4, bool kResidual>
[[gnu::always_inline]] inline void dropout_tiles_body(const DropoutArgs<T>& a, int64_t t0,
                                                      int64_t t1) {
  using Bits = std::conditional_t<sizeof(T) == 8, uint64_t, uint32_t>;
  [[maybe_unused]] const float scale_f = static_cast<float>(a.scale);
  alignas(64) uint32_t group[kTilesV4 * kTile];
  for (int64_t t = t0; t < t1; ++t) {
    const uint32_t* words = group;
    if constexpr (kV4) {
      // kTilesV4 tiles' words at once (those past t1 are computed and left unused).
      const int64_t slot = (t - t0) % kTilesV4;
      if (slot == 0) {
        philox_tiles_v4(a.seed, static_cast<uint64_t>((a.tile0 + t) * kLanes), a.offset, group);
      }
      words = group + slot * kTile;
    } else {
      philox_tile_body(a.seed, static_cast<uint64_t>((a.tile0 + t) * kLanes), a.offset, group);
    }
    const int64_t base = t * kTile, count = std::min(kTile, a.n - base);
    const T* xs = a.x + base;
    T* ys = a.y + base;
    [[maybe_unused]] const T* rs = a.residual + (kResidual ? base : 0);
    for (int64_t w = 0; w < 2 && 32 * w < count; ++w) {
      const int64_t end = std::min<int64_t>(32, count - 32 * w);
      uint32_t bits;
      if constexpr (kV4) {
        bits = pack_v4(words + 32 * w, a.threshold);
      } else {
        bits = pack_v3(words + 32 * w, a.threshold);
      }
      a.mask[2 * t + w] = end == 32 ? bits : bits & ((1u << end) - 1u);
    }
    // Select by bit mask (dropped elements become +0, as in ref); a branch or a float select
    // on an integer compare keeps GCC from vectorizing. dropout_apply_typed has the same select
    // with the mask's bits; selecting by those bits here too measured 8% slower for f32.
    if constexpr (std::is_same_v<T, bfloat16>) {  // scaled in f32, rounded once, as ref
#pragma omp simd
      for (int64_t e = 0; e < count; ++e) {
        uint16_t mask = static_cast<uint16_t>(0u - static_cast<uint32_t>(words[e] >= a.threshold));
        const uint16_t dropped = bfloat16::from_float(static_cast<float>(xs[e]) * scale_f) & mask;
        if constexpr (kResidual) {
          const float d = std::bit_cast<float>(static_cast<uint32_t>(dropped) << 16);
          ys[e].bits = bfloat16::from_float(d + static_cast<float>(rs[e]));
        } else {
          ys[e].bits = dropped;
        }
      }
    } else {
#pragma omp simd
      for (int64_t e = 0; e < count; ++e) {
        Bits mask = Bits(0) - static_cast<Bits>(words[e] >= a.threshold);
        const T dropped = std::bit_cast<T>(std::bit_cast<Bits>(xs[e] * a.scale) & mask);
        if constexpr (kResidual) {
          ys[e] = dropped + rs[e];
        } else {
          ys[e] = dropped;
        }
      }
    }
  }
}

template <typename T>
void dropout_tiles_v3(const DropoutArgs<T>& a, int64_t t0, int64_t t1) {
  if (a.residual) {
    dropout_tiles_body<T, false, true>(a, t0, t1);
  } else {
    dropout_tiles_body<T, false, false>(a, t0, t1);
  }
}

// The same compiled for AVX-512 (x86-64-v4): 16 lanes of 32-bit words per register and 8 of
// Philox's 64-bit products per vpmuludq; W2-bf16's [128, 512] dropout 65-71 -> 45 us.
template <typename T>
__attribute__((target("arch=x86-64-v4"), flatten)) void dropout_tiles_v4(const DropoutArgs<T>& a,
                                                                         int64_t t0, int64_t t1) {
  if (a.residual) {
    dropout_tiles_body<T, true, true>(a, t0, t1);
  } else {
    dropout_tiles_body<T, true, false>(a, t0, t1);
  }
}

constexpr int64_t kTilesPerTask = 16;  // 1024 elements per OpenMP iteration

template <typename T>
void dropout_typed(KernelContext& ctx) {
  const Tensor& xt = ctx.inputs[0];
  DropoutArgs<T> a;
  a.x = xt.data<T>();
  a.y = ctx.outputs[0].data<T>();
  if (ctx.inputs.size() > 2) a.residual = ctx.inputs[2].data<T>();
  a.mask = reinterpret_cast<uint32_t*>(ctx.outputs[1].data<int32_t>());
  a.n = xt.num_elements();
  const double rate = ctx.attrs.get_float("rate");
  a.seed = static_cast<uint64_t>(ctx.attrs.get_int("seed"));
  a.offset = static_cast<uint64_t>(ctx.inputs[1].data<int64_t>()[0]);
  a.threshold = static_cast<uint32_t>(std::floor(rate * 4294967296.0));
  a.scale = static_cast<typename DropoutArgs<T>::C>(1.0 / (1.0 - rate));
  const int64_t tiles = (a.n + kTile - 1) / kTile;
  const int64_t tasks = (tiles + kTilesPerTask - 1) / kTilesPerTask;
  static const bool v4 = cpu_runs_v4_variants();
#pragma omp parallel for schedule(static) if (a.n >= kParallelThreshold && !omp_in_parallel())
  for (int64_t task = 0; task < tasks; ++task) {
    const int64_t t0 = task * kTilesPerTask, t1 = std::min(tiles, t0 + kTilesPerTask);
    if (v4) {
      dropout_tiles_v4(a, t0, t1);
    } else {
      dropout_tiles_v3(a, t0, t1);
    }
  }
}

// dropout_apply's f32 loop on AVX-512: each mask word's halves are the write masks of two
// maskz multiplies (+0 where the bit is clear, as the select below gives).
__attribute__((target("arch=x86-64-v4"))) void apply_f32_v4(const uint32_t* mask, int64_t n,
                                                            float scale, const float* x, float* y) {
  const __m512 s = _mm512_set1_ps(scale);
  const int64_t whole = n / 32;
  for (int64_t w = 0; w < whole; ++w) {
    const uint32_t word = mask[w];
    const float* in = x + 32 * w;
    float* out = y + 32 * w;
    _mm512_storeu_ps(out,
                     _mm512_maskz_mul_ps(static_cast<__mmask16>(word), _mm512_loadu_ps(in), s));
    _mm512_storeu_ps(out + 16, _mm512_maskz_mul_ps(static_cast<__mmask16>(word >> 16),
                                                   _mm512_loadu_ps(in + 16), s));
  }
  for (int64_t e = 32 * whole; e < n; e += 16) {  // the last word's elements
    const int64_t count = std::min<int64_t>(16, n - e);
    const auto lanes = static_cast<__mmask16>((1u << count) - 1u);
    const auto bits = static_cast<__mmask16>(mask[e / 32] >> (e % 32));
    _mm512_mask_storeu_ps(
        y + e, lanes, _mm512_maskz_mul_ps(bits & lanes, _mm512_maskz_loadu_ps(lanes, x + e), s));
  }
}

// 16 bf16 values (widened to f32) times `scale` where `keep` has the lane's bit, else +0,
// rounded back to bf16 as bfloat16::from_float rounds (nearest even, NaN kept quiet).
__attribute__((target("arch=x86-64-v4"))) inline __m256i scale_bf16_v4(__m256i x, __mmask16 keep,
                                                                       __m512 scale) {
  // maskz forms with every lane set: GCC 12 reads the plain forms' undefined pass-through
  // operand as maybe-uninitialized.
  constexpr __mmask16 all = 0xffff;
  const __m512i wide = _mm512_maskz_slli_epi32(all, _mm512_maskz_cvtepu16_epi32(all, x), 16);
  const __m512i u =
      _mm512_castps_si512(_mm512_maskz_mul_ps(keep, _mm512_castsi512_ps(wide), scale));
  const __m512i high = _mm512_maskz_srli_epi32(all, u, 16);
  const __m512i odd = _mm512_and_si512(high, _mm512_set1_epi32(1));
  const __m512i rounded = _mm512_maskz_srli_epi32(
      all, _mm512_add_epi32(u, _mm512_add_epi32(odd, _mm512_set1_epi32(0x7fff))), 16);
  const __mmask16 nan = _mm512_cmpgt_epu32_mask(_mm512_and_si512(u, _mm512_set1_epi32(0x7fffffff)),
                                                _mm512_set1_epi32(0x7f800000));
  const __m512i quiet = _mm512_or_si512(high, _mm512_set1_epi32(0x40));
  return _mm512_maskz_cvtepi32_epi16(all, _mm512_mask_mov_epi32(rounded, nan, quiet));
}

// dropout_apply's bf16 loop on AVX-512: each mask word covers 32 values, two halves of 16.
__attribute__((target("arch=x86-64-v4"))) void apply_bf16_v4(const uint32_t* mask, int64_t n,
                                                             float scale, const bfloat16* x,
                                                             bfloat16* y) {
  const __m512 s = _mm512_set1_ps(scale);
  for (int64_t e = 0; e < n; e += 16) {
    const int64_t count = std::min<int64_t>(16, n - e);
    const auto lanes = static_cast<__mmask16>((1u << count) - 1u);
    const auto bits = static_cast<__mmask16>(mask[e / 32] >> (e % 32));
    const __m256i in = _mm256_maskz_loadu_epi16(lanes, x + e);
    _mm256_mask_storeu_epi16(y + e, lanes, scale_bf16_v4(in, bits & lanes, s));
  }
}

// dropout_apply over mask words [w0, w1) (elements 32 w0 .. min(n, 32 w1)): y = x * scale where
// the packed mask's bit is set, else +0 (dropout_tiles_body's select, so the values are
// dropout's bit for bit). f32 and bf16 on AVX-512 run apply_f32_v4 / apply_bf16_v4.
template <typename T, typename C>
void apply_words(const uint32_t* mask, int64_t w0, int64_t w1, int64_t n, C scale, const T* x,
                 T* y) {
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, bfloat16>) {
    static const bool v4 = cpu_runs_v4_variants();
    if (v4) {
      const int64_t count = std::min(n, 32 * w1) - 32 * w0;
      if constexpr (std::is_same_v<T, float>) {
        return apply_f32_v4(mask + w0, count, scale, x + 32 * w0, y + 32 * w0);
      } else {
        return apply_bf16_v4(mask + w0, count, scale, x + 32 * w0, y + 32 * w0);
      }
    }
  }
  using Bits = std::conditional_t<sizeof(T) == 8, uint64_t, uint32_t>;
  for (int64_t w = w0; w < w1; ++w) {
    const uint32_t word = mask[w];
    const int64_t base = w * 32, count = std::min<int64_t>(32, n - base);
    const T* xs = x + base;
    T* ys = y + base;
    if constexpr (std::is_same_v<T, bfloat16>) {
#pragma omp simd
      for (int64_t e = 0; e < count; ++e) {
        uint16_t m = static_cast<uint16_t>(0u - ((word >> e) & 1u));
        ys[e].bits = bfloat16::from_float(static_cast<float>(xs[e]) * scale) & m;
      }
    } else {
#pragma omp simd
      for (int64_t e = 0; e < count; ++e) {
        Bits m = Bits(0) - static_cast<Bits>((word >> e) & 1u);
        ys[e] = std::bit_cast<T>(std::bit_cast<Bits>(xs[e] * scale) & m);
      }
    }
  }
}

// dropout_apply: apply_words over chunks of words spread over OpenMP threads.
template <typename T>
void dropout_apply_typed(KernelContext& ctx) {
  using C = std::conditional_t<std::is_same_v<T, double>, double, float>;
  const T* x = ctx.inputs[0].data<T>();
  const auto* mask = reinterpret_cast<const uint32_t*>(ctx.inputs[1].data<int32_t>());
  T* y = ctx.outputs[0].data<T>();
  const int64_t n = ctx.inputs[0].num_elements();
  const C scale = static_cast<C>(1.0 / (1.0 - ctx.attrs.get_float("rate")));
  const int64_t words = (n + 31) / 32;
  const int64_t tasks = n >= kParallelThreshold ? 4 * omp_get_max_threads() : 1;
#pragma omp parallel for schedule(static) if (tasks > 1 && !omp_in_parallel())
  for (int64_t task = 0; task < tasks; ++task) {
    apply_words(mask, words * task / tasks, words * (task + 1) / tasks, n, scale, x, y);
  }
}

// Calls fn with a value of x's element type: double, bfloat16, else float (the claimed dtypes).
template <typename Fn>
void by_dtype(DType dtype, Fn fn) {
  switch (dtype) {
    case DType::kF64:
      return fn(double{});
    case DType::kBF16:
      return fn(bfloat16{});
    default:
      return fn(float{});
  }
}

void dropout_apply_cpu(KernelContext& ctx) {
  by_dtype(ctx.inputs[0].dtype(), [&](auto tag) { dropout_apply_typed<decltype(tag)>(ctx); });
}

void dropout_cpu(KernelContext& ctx) {
  by_dtype(ctx.inputs[0].dtype(), [&](auto tag) { dropout_typed<decltype(tag)>(ctx); });
}

}  // namespace

void dropout_f32(uint64_t seed, uint64_t offset, uint32_t threshold, float scale, int64_t first,
                 int64_t n, const float* x, float* y, uint32_t* mask) {
  static const bool v4 = cpu_runs_v4_variants();
  DropoutArgs<float> a{x, y, mask, n, seed, offset, threshold, scale, first / kTile};
  const int64_t tiles = (n + kTile - 1) / kTile;
  if (v4) {
    dropout_tiles_v4(a, 0, tiles);
  } else {
    dropout_tiles_v3(a, 0, tiles);
  }
}

void dropout_apply_f32(const uint32_t* mask, int64_t n, float scale, const float* x, float* y) {
  apply_words(mask, 0, (n + 31) / 32, n, scale, x, y);
}

void register_dropout_kernels(kernels::KernelRegistry& r) {
  kernels::add_fn_kernel(r, "dropout", "cpu_vec", {DType::kF32, DType::kF64, DType::kBF16},
                         kVectorPriority, dropout_cpu);
  kernels::add_fn_kernel(r, "dropout_apply", "cpu_vec", {DType::kF32, DType::kF64, DType::kBF16},
                         kVectorPriority, dropout_apply_cpu);
}

}  // namespace tern::cpu

TERN_CPU_V3_END
