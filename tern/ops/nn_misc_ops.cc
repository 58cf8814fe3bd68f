// nn_misc op family. dropout(x, offset){rate, seed} keeps each element with probability 1 - rate
// and scales it by 1 / (1 - rate); the mask is a pure function of (seed, offset, element index)
// through Philox (key = seed, counter = element / 4, counter_hi = offset), so a new offset per
// step gives a new mask. dropout also returns the mask it drew, packed 32 elements to an i32 word
// (bit e % 32 of word e / 32 set iff element e was kept), and dropout_apply(dy, mask){rate} scales
// by it: dropout's gradient, reading the mask instead of running Philox again (Philox is most of
// dropout's time). embedding gathers rows of params [V, D...] by integer ids of any shape.
#include "tern/ops/families.h"
#include "tern/ops/infer.h"
#include "tern/ops/registry.h"

namespace tern::ops {
namespace {

void require_rate(const InferContext& ctx) {
  double rate = ctx.attrs.get_float("rate");
  if (!(rate >= 0.0 && rate < 1.0)) ctx.fail("rate must be in [0, 1), got ", rate);
}

// The packed mask of an x of `elements` elements: i32 [ceil(elements / 32)].
TensorType mask_type(int64_t elements) {
  return {DType::kI32, Shape{(elements + 31) / 32}};
}

// x, offset (i64 scalar)[, residual (x's type)] -> y (x's type), mask.
std::vector<TensorType> infer_dropout(const InferContext& ctx) {
  require_rate(ctx);
  const TensorType& offset = ctx.input(1);
  if (offset.dtype != DType::kI64 || offset.shape.rank() != 0) {
    ctx.fail("offset must be an i64 scalar, got ", offset.to_string());
  }
  if (ctx.inputs.size() > 3) ctx.fail("expects at most 3 inputs (x, offset, residual)");
  if (ctx.inputs.size() > 2 && ctx.input(2) != ctx.input(0)) {
    ctx.fail("residual must be ", ctx.input(0).to_string(), " (x's type), got ",
             ctx.input(2).to_string());
  }
  return {ctx.input(0), mask_type(ctx.input(0).shape.num_elements())};
}

// x, mask (dropout's second output for an x of x's shape) -> same type as x.
std::vector<TensorType> infer_dropout_apply(const InferContext& ctx) {
  require_rate(ctx);
  const TensorType want = mask_type(ctx.input(0).shape.num_elements());
  if (ctx.input(1) != want) {
    ctx.fail("mask must be ", want.to_string(), " (dropout's mask for ", ctx.input(0).shape,
             "), got ", ctx.input(1).to_string());
  }
  return infer_same_as_input(ctx, 0);
}

// params [V, D...], ids [I...] (i32/i64) -> [I..., D...].
std::vector<TensorType> infer_embedding(const InferContext& ctx) {
  const TensorType& params = ctx.input(0);
  const TensorType& ids = ctx.input(1);
  if (params.shape.rank() < 1) ctx.fail("params must have rank >= 1 ([vocabulary, dims...])");
  if (ids.dtype != DType::kI32 && ids.dtype != DType::kI64) {
    ctx.fail("ids must be i32 or i64, got ", dtype_name(ids.dtype));
  }
  std::vector<int64_t> out = ids.shape.dims();
  out.insert(out.end(), params.shape.dims().begin() + 1, params.shape.dims().end());
  return {{params.dtype, Shape(out)}};
}

}  // namespace

void register_nn_misc_ops(OpRegistry& r) {
  const std::vector<AttrSpec> dropout_attrs = {{"rate", AttrKind::kFloat, std::nullopt},
                                               {"seed", AttrKind::kInt, int64_t{0}}};
  r.add({.name = "dropout",
         .family = "nn_misc",
         .doc = "x * mask / (1 - rate), mask ~ Bernoulli(1 - rate) from Philox(seed) at "
                "(element, offset); deterministic in (seed, offset). Also returns the mask, "
                "32 elements per i32 word. With a residual (x's type), returns that plus the "
                "dropped x, rounded as the two ops apart (fuse_dropout_residual).",
         .inputs = {"x", "offset", "residual"},
         .variadic = true,  // the residual is optional
         .min_inputs = 2,
         .attrs = dropout_attrs,
         .dtypes = kFloatDTypes,
         // Kernels read an element of x and the residual before writing it.
         .inplace = {{0, 0}, {0, 2}},
         .infer = infer_dropout});
  r.add({.name = "dropout_apply",
         .family = "nn_misc",
         .doc = "x * mask / (1 - rate) with a mask dropout returned (the gradient of dropout).",
         .inputs = {"x", "mask"},
         .attrs = {{"rate", AttrKind::kFloat, std::nullopt}},
         .dtypes = kFloatDTypes,
         .infer = infer_dropout_apply});
  r.add({.name = "embedding",
         .family = "nn_misc",
         .doc = "Rows of params selected by ids: out[i..., :] = params[ids[i...], :]. Out-of-range "
                "ids are an error.",
         .inputs = {"params", "ids"},
         .dtypes = kNumericDTypes,
         .infer = infer_embedding});
}

}  // namespace tern::ops
