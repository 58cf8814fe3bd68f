// Fast kernels for dropout / dropout_grad (f32, f64, bf16 scaled in f32). Same mask as the
// reference (word i % 4 of Philox(seed)(i / 4, offset) >= rate * 2^32) but one Philox block per
// four elements instead of one per element, sixteen blocks at a time across SIMD lanes (AVX-512
// where the CPU has it), and tiles spread over OpenMP threads. Every element is independent, so
// results are bitwise equal to ref for any thread count.
#include <omp.h>
#include <algorithm>
#include <bit>
#include <cmath>
#include <type_traits>

#include "tern/backends/cpu/cpu_isa.h"
#include "tern/backends/cpu/cpu_kernels.h"

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

// What one call of dropout / dropout_grad needs for its tiles.
template <typename T>
struct DropoutArgs {
  using C = std::conditional_t<std::is_same_v<T, double>, double, float>;  // the compute type
  const T* x;
  T* y;
  int64_t n;
  uint64_t seed, offset;
  uint32_t threshold;
  C scale;
};

// Tiles [t0, t1): the Philox words, then y = x * scale where the word is >= threshold, else +0.
template <typename T>
[[gnu::always_inline]] inline void dropout_tiles_body(const DropoutArgs<T>& a, int64_t t0,
                                                      int64_t t1) {
  using Bits = std::conditional_t<sizeof(T) == 8, uint64_t, uint32_t>;
  [[maybe_unused]] const float scale_f = static_cast<float>(a.scale);
  for (int64_t t = t0; t < t1; ++t) {
    alignas(64) uint32_t words[kTile];
    philox_tile_body(a.seed, static_cast<uint64_t>(t * kLanes), a.offset, words);
    const int64_t base = t * kTile, count = std::min(kTile, a.n - base);
    const T* xs = a.x + base;
    T* ys = a.y + base;
    // Select by bit mask (dropped elements become +0, as in ref); a branch or a float select
    // on an integer compare keeps GCC from vectorizing.
    if constexpr (std::is_same_v<T, bfloat16>) {  // scaled in f32, rounded once, as ref
#pragma omp simd
      for (int64_t e = 0; e < count; ++e) {
        uint16_t mask = static_cast<uint16_t>(0u - static_cast<uint32_t>(words[e] >= a.threshold));
        ys[e].bits = bfloat16::from_float(static_cast<float>(xs[e]) * scale_f) & mask;
      }
    } else {
#pragma omp simd
      for (int64_t e = 0; e < count; ++e) {
        Bits mask = Bits(0) - static_cast<Bits>(words[e] >= a.threshold);
        ys[e] = std::bit_cast<T>(std::bit_cast<Bits>(xs[e] * a.scale) & mask);
      }
    }
  }
}

template <typename T>
void dropout_tiles_v3(const DropoutArgs<T>& a, int64_t t0, int64_t t1) {
  dropout_tiles_body(a, t0, t1);
}

// The same compiled for AVX-512 (x86-64-v4): 16 lanes of 32-bit words per register and 8 of
// Philox's 64-bit products per vpmuludq; W2-bf16's [128, 512] dropout 65-71 -> 45 us.
template <typename T>
__attribute__((target("arch=x86-64-v4"))) void dropout_tiles_v4(const DropoutArgs<T>& a, int64_t t0,
                                                                int64_t t1) {
  dropout_tiles_body(a, t0, t1);
}

constexpr int64_t kTilesPerTask = 16;  // 1024 elements per OpenMP iteration

template <typename T>
void dropout_typed(KernelContext& ctx) {
  const Tensor& xt = ctx.inputs[0];
  DropoutArgs<T> a;
  a.x = xt.data<T>();
  a.y = ctx.outputs[0].data<T>();
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

void dropout_cpu(KernelContext& ctx) {
  switch (ctx.inputs[0].dtype()) {
    case DType::kF64:
      return dropout_typed<double>(ctx);
    case DType::kBF16:
      return dropout_typed<bfloat16>(ctx);
    default:
      return dropout_typed<float>(ctx);
  }
}

}  // namespace

void register_dropout_kernels(kernels::KernelRegistry& r) {
  for (const char* op : {"dropout", "dropout_grad"}) {
    kernels::add_fn_kernel(r, op, "cpu_vec", {DType::kF32, DType::kF64, DType::kBF16},
                           kVectorPriority, dropout_cpu);
  }
}

}  // namespace tern::cpu

TERN_CPU_V3_END
