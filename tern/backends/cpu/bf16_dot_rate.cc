// bf16_dot_speedup (cpu_isa.h): the FLOP rate of AVX512_BF16's dot product (vdpbf16ps) against
// the f32 FMA's (vfmadd231ps) on one core, both on 512-bit registers, measured once.
//
// What it shows (`tern --version`): why bf16 matmuls and convolutions run on oneDNN's bf16 kernels
// on AMD CPUs and widened to f32 on Intel ones without AMX (onednn_widen.cc; the choice is by CPU,
// not by this timing). The instruction set alone does not tell: the Emerald Rapids machines
// without AMX that tern ran on issue vdpbf16ps at half the FMA's rate, so its two products per
// lane buy nothing over f32 (85 against 170 GFLOP/s per core), while AMD's Zen 5 issues it at the
// FMA's rate: twice the FLOPs (oneDNN 2.6's bf16 2048^3 matmul 805 GFLOP/s against its f32 412 on
// two Zen 5 cores).
//
// How: 16 independent accumulator chains (enough to cover the latency of either instruction at
// two per cycle), 8192 steps of each, rounds of the two interleaved and the best time of each
// kept (a busy host slows both; the first round also takes the clock's AVX-512 ramp). About 1 ms.
#include <immintrin.h>

#include <algorithm>
#include <chrono>
#include <cstdint>

#include "tern/backends/cpu/cpu_isa.h"

TERN_CPU_V3_BEGIN  // the code below is x86-64-v3 (cpu_isa.h); the loops are AVX-512

namespace tern::cpu {
namespace {

#define TERN_BF16_DOT __attribute__((target("avx512f,avx512bf16"), noinline))

// (GCC 12's _mm512_reduce_add_ps reads an undefined register: -Wuninitialized.)
__attribute__((target("avx512f"))) inline float lanes_sum(__m512 v) {
  alignas(64) float lanes[16];
  _mm512_store_ps(lanes, v);
  float s = 0;
  for (float x : lanes) s += x;
  return s;
}

constexpr int kChains = 16;
constexpr int kSteps = 8192;
constexpr int kRounds = 7;

// Each returns a sum of its accumulators so that the loop is not dropped; the values stay normal
// (no denormal or overflow slows either).
TERN_BF16_DOT float fma_chains(float seed) {
  __m512 acc[kChains];
#pragma GCC unroll 16
  for (int i = 0; i < kChains; ++i) acc[i] = _mm512_set1_ps(seed + static_cast<float>(i));
  const __m512 scale = _mm512_set1_ps(0.999f), shift = _mm512_set1_ps(1e-3f);
  for (int s = 0; s < kSteps; ++s) {
#pragma GCC unroll 16
    for (int i = 0; i < kChains; ++i) acc[i] = _mm512_fmadd_ps(acc[i], scale, shift);
  }
  __m512 sum = acc[0];
#pragma GCC unroll 16
  for (int i = 1; i < kChains; ++i) sum = _mm512_add_ps(sum, acc[i]);
  return lanes_sum(sum);
}

TERN_BF16_DOT float dot_chains(float seed) {
  __m512 acc[kChains];
#pragma GCC unroll 16
  for (int i = 0; i < kChains; ++i) acc[i] = _mm512_set1_ps(seed + static_cast<float>(i));
  // 2^-10 * 2^-10 twice per lane per step: the sums grow by 2^-19 per step, 1/64 in all.
  const __m512bh x = _mm512_cvtne2ps_pbh(_mm512_set1_ps(0x1p-10f), _mm512_set1_ps(0x1p-10f));
  for (int s = 0; s < kSteps; ++s) {
#pragma GCC unroll 16
    for (int i = 0; i < kChains; ++i) acc[i] = _mm512_dpbf16_ps(acc[i], x, x);
  }
  __m512 sum = acc[0];
#pragma GCC unroll 16
  for (int i = 1; i < kChains; ++i) sum = _mm512_add_ps(sum, acc[i]);
  return lanes_sum(sum);
}

#undef TERN_BF16_DOT

template <typename F>
double seconds_of(F f, float seed, volatile float& sink) {
  const auto t0 = std::chrono::steady_clock::now();
  sink = sink + f(seed);
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

double measure() {
  if (cpu_isa() != CpuIsa::kX86_64_v3 || !__builtin_cpu_supports("avx512f") ||
      !__builtin_cpu_supports("avx512bf16")) {
    return 0;
  }
  volatile float sink = 0;
  double fma = 1e30, dot = 1e30;
  for (int r = 0; r < kRounds; ++r) {
    fma = std::min(fma, seconds_of(fma_chains, static_cast<float>(r), sink));
    dot = std::min(dot, seconds_of(dot_chains, static_cast<float>(r), sink));
  }
  // Per instruction: the FMA does 2 FLOPs per f32 lane, the dot product 4 (two products, two
  // additions).
  return 2.0 * fma / dot;
}

}  // namespace

double bf16_dot_speedup() {
  static const double speedup = measure();
  return speedup;
}

}  // namespace tern::cpu

TERN_CPU_V3_END
