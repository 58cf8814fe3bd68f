// random op family: tensors of a given shape and dtype drawn from Philox4x32-10 keyed by `seed`.
// No inputs; the same attributes always give the same values (the counter is the element index),
// so the ops are stateful only in that they must never be folded or merged away.
// random_uniform: [minval, maxval). random_normal: Box-Muller. truncated_normal: normal samples
// beyond two standard deviations are redrawn.
#include <cmath>

#include "tern/ops/families.h"
#include "tern/ops/infer.h"
#include "tern/ops/registry.h"

namespace tern::ops {
namespace {

TensorType declared_type(const InferContext& ctx) {
  const auto& dims = ctx.attrs.get_ints("shape");
  for (int64_t d : dims) {
    if (d < 0) ctx.fail("shape has a negative dimension (", d, ")");
  }
  try {
    return {ctx.attrs.get_dtype("dtype"), Shape(dims)};
  } catch (const Error& e) {
    ctx.fail("bad shape: ", e.message());
  }
}

std::vector<TensorType> infer_uniform(const InferContext& ctx) {
  double lo = ctx.attrs.get_float("minval"), hi = ctx.attrs.get_float("maxval");
  if (!std::isfinite(lo) || !std::isfinite(hi) || lo > hi) {
    ctx.fail("need finite minval <= maxval, got [", lo, ", ", hi, ")");
  }
  return {declared_type(ctx)};
}

std::vector<TensorType> infer_normal(const InferContext& ctx) {
  double mean = ctx.attrs.get_float("mean"), stddev = ctx.attrs.get_float("stddev");
  if (!std::isfinite(mean) || !std::isfinite(stddev) || stddev < 0) {
    ctx.fail("need a finite mean and a finite stddev >= 0, got mean ", mean, ", stddev ", stddev);
  }
  return {declared_type(ctx)};
}

}  // namespace

void register_random_ops(OpRegistry& r) {
  const AttrSpec shape{"shape", AttrKind::kInts, std::nullopt};
  const AttrSpec dtype{"dtype", AttrKind::kDType, DType::kF32};
  const AttrSpec seed{"seed", AttrKind::kInt, int64_t{0}};
  const uint32_t traits = kTraitStateful | kTraitNotDifferentiable;
  r.add({.name = "random_uniform",
         .family = "random",
         .doc = "Uniform samples in [minval, maxval).",
         .attrs = {shape,
                   dtype,
                   seed,
                   {"minval", AttrKind::kFloat, 0.0},
                   {"maxval", AttrKind::kFloat, 1.0}},
         .dtypes = kFloatDTypes,
         .key_input = -1,
         .traits = traits,
         .infer = infer_uniform});
  r.add(
      {.name = "random_normal",
       .family = "random",
       .doc = "Normal samples (Box-Muller) with the given mean and stddev.",
       .attrs =
           {shape, dtype, seed, {"mean", AttrKind::kFloat, 0.0}, {"stddev", AttrKind::kFloat, 1.0}},
       .dtypes = kFloatDTypes,
       .key_input = -1,
       .traits = traits,
       .infer = infer_normal});
  r.add(
      {.name = "truncated_normal",
       .family = "random",
       .doc = "Normal samples with those beyond two stddevs from the mean redrawn.",
       .attrs =
           {shape, dtype, seed, {"mean", AttrKind::kFloat, 0.0}, {"stddev", AttrKind::kFloat, 1.0}},
       .dtypes = kFloatDTypes,
       .key_input = -1,
       .traits = traits,
       .infer = infer_normal});
}

}  // namespace tern::ops
