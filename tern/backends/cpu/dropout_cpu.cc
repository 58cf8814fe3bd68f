// Fast kernels for dropout / dropout_grad (f32, f64, bf16 scaled in f32). Same mask as the
// reference (word i % 4 of Philox(seed)(i / 4, offset) >= rate * 2^32) but one Philox block per
// four elements instead of one per element, sixteen blocks at a time across SIMD lanes, and tiles
// spread over OpenMP threads. Every element is independent, so results are bitwise equal to ref for
// any thread count.
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

constexpr int64_t kLanes = 16;                   // Philox blocks per tile
constexpr int64_t kTile = 4 * kLanes;            // elements per tile
constexpr int64_t kParallelThreshold = 1 << 16;  // elements below which one thread runs

// Philox4x32-10 (tern/base/philox.cc) for counters (block0 + l, offset), l in [0, kLanes);
// word k of lane l lands in out[4 * l + k], i.e. in element order.
inline void philox_tile(uint64_t seed, uint64_t block0, uint64_t offset, uint32_t* __restrict out) {
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

template <typename T>
void dropout_typed(KernelContext& ctx) {
  using Bits = std::conditional_t<sizeof(T) == 8, uint64_t, uint32_t>;
  using C = std::conditional_t<std::is_same_v<T, double>, double, float>;  // the compute type
  const Tensor& xt = ctx.inputs[0];
  const T* x = xt.data<T>();
  T* y = ctx.outputs[0].data<T>();
  const int64_t n = xt.num_elements();
  const double rate = ctx.attrs.get_float("rate");
  const uint64_t seed = static_cast<uint64_t>(ctx.attrs.get_int("seed"));
  const uint64_t offset = static_cast<uint64_t>(ctx.inputs[1].data<int64_t>()[0]);
  const uint32_t threshold = static_cast<uint32_t>(std::floor(rate * 4294967296.0));
  const C scale = static_cast<C>(1.0 / (1.0 - rate));
  [[maybe_unused]] const float scale_f = static_cast<float>(scale);
  const int64_t tiles = (n + kTile - 1) / kTile;
#pragma omp parallel for schedule(static) if (n >= kParallelThreshold && !omp_in_parallel())
  for (int64_t t = 0; t < tiles; ++t) {
    alignas(64) uint32_t words[kTile];
    philox_tile(seed, static_cast<uint64_t>(t * kLanes), offset, words);
    const int64_t base = t * kTile, count = std::min(kTile, n - base);
    const T* xs = x + base;
    T* ys = y + base;
    // Select by bit mask (dropped elements become +0, as in ref); a branch or a float select
    // on an integer compare keeps GCC from vectorizing.
    if constexpr (std::is_same_v<T, bfloat16>) {  // scaled in f32, rounded once, as ref
#pragma omp simd
      for (int64_t e = 0; e < count; ++e) {
        uint16_t mask = static_cast<uint16_t>(0u - static_cast<uint32_t>(words[e] >= threshold));
        ys[e].bits = bfloat16::from_float(static_cast<float>(xs[e]) * scale_f) & mask;
      }
    } else {
#pragma omp simd
      for (int64_t e = 0; e < count; ++e) {
        Bits mask = Bits(0) - static_cast<Bits>(words[e] >= threshold);
        ys[e] = std::bit_cast<T>(std::bit_cast<Bits>(xs[e] * scale) & mask);
      }
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
