// Reference kernels for the random ops. Element i of an f32/bf16/f16 output uses word i % 4 of
// Philox(seed)(i / 4, hi); f64 outputs use two words per element (block i / 2). Normals come in
// Box-Muller pairs from consecutive (u1, u2) words of a block; truncated_normal redraws element i
// from the block with counter_hi = attempt until it lies within two stddevs.
#include <cmath>
#include <numbers>

#include "tern/base/philox.h"
#include "tern/kernels/ref/ref.h"
#include "tern/ops/infer.h"

namespace tern::kernels::ref {
namespace {

// Uniform in [0, 1) for element i at counter_hi `hi`.
double unit_uniform(const Philox& rng, uint64_t i, uint64_t hi, bool f64) {
  if (f64) {
    Philox::Block b = rng(i / 2, hi);
    size_t k = 2 * static_cast<size_t>(i % 2);
    return Philox::to_unit_double(b[k], b[k + 1]);
  }
  return Philox::to_unit_float(rng(i / 4, hi)[static_cast<size_t>(i % 4)]);
}

// Standard normal for element i at counter_hi `hi`: lanes (0, 1) and (2, 3) of a block are
// Box-Muller pairs (f64: the block's two doubles form one pair).
double unit_normal(const Philox& rng, uint64_t i, uint64_t hi, bool f64) {
  Philox::Block b;
  double u1, u2;
  bool second;
  if (f64) {
    b = rng(i / 2, hi);
    u1 = Philox::to_unit_double(b[0], b[1]);
    u2 = Philox::to_unit_double(b[2], b[3]);
    second = i % 2 == 1;
  } else {
    b = rng(i / 4, hi);
    size_t pair = 2 * static_cast<size_t>((i % 4) / 2);
    u1 = Philox::to_unit_float(b[pair]);
    u2 = Philox::to_unit_float(b[pair + 1]);
    second = i % 2 == 1;
  }
  double radius = std::sqrt(-2.0 * std::log(1.0 - u1));  // 1 - u1 in (0, 1]
  double theta = 2.0 * std::numbers::pi * u2;
  return radius * (second ? std::sin(theta) : std::cos(theta));
}

// Redraws beyond 2 stddevs are independent with probability ~0.0455 each; after kMaxAttempts
// (probability < 1e-80) the element takes the mean so the kernel always terminates.
constexpr uint64_t kMaxAttempts = 64;

double truncated_unit_normal(const Philox& rng, uint64_t i, bool f64) {
  for (uint64_t attempt = 0; attempt < kMaxAttempts; ++attempt) {
    double z = unit_normal(rng, i, attempt, f64);
    if (std::fabs(z) <= 2.0) return z;
  }
  return 0.0;
}

enum class Dist { kUniform, kNormal, kTruncated };

template <typename T>
void random_ref(KernelContext& ctx, Dist dist) {
  Tensor& out = ctx.outputs[0];
  T* y = out.data<T>();
  const Philox rng(static_cast<uint64_t>(ctx.attrs.get_int("seed")));
  const bool f64 = out.dtype() == DType::kF64;
  double a, b;  // value = a + b * sample
  if (dist == Dist::kUniform) {
    a = ctx.attrs.get_float("minval");
    b = ctx.attrs.get_float("maxval") - a;
  } else {
    a = ctx.attrs.get_float("mean");
    b = ctx.attrs.get_float("stddev");
  }
  for (int64_t e = 0; e < out.num_elements(); ++e) {
    uint64_t i = static_cast<uint64_t>(e);
    double s = dist == Dist::kUniform  ? unit_uniform(rng, i, 0, f64)
               : dist == Dist::kNormal ? unit_normal(rng, i, 0, f64)
                                       : truncated_unit_normal(rng, i, f64);
    y[e] = static_cast<T>(static_cast<compute_t<T>>(a + b * s));
  }
}

void add_random_ref(KernelRegistry& r, const char* op, Dist dist) {
  add_ref(r, op, ops::kFloatDTypes, [op, dist](KernelContext& ctx) {
    dispatch_float(ctx.outputs[0].dtype(), op,
                   [&](auto tag) { random_ref<decltype(tag)>(ctx, dist); });
  });
}

}  // namespace

void register_random_ref(KernelRegistry& r) {
  add_random_ref(r, "random_uniform", Dist::kUniform);
  add_random_ref(r, "random_normal", Dist::kNormal);
  add_random_ref(r, "truncated_normal", Dist::kTruncated);
}

}  // namespace tern::kernels::ref
