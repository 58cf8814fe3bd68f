// loss-scale ops: the two pieces of dynamic loss scaling (tern/optim/loss_scale.h) that are not
// plain arithmetic. Neither is differentiable.
//
//   all_finite         x... (one or more tensors of one float dtype, any shapes)
//                      -> bool scalar: true when no element of any input is Inf or NaN
//                      (empty inputs count as finite).
//   loss_scale_update  scale (f32/f64 scalar variable), good_steps (i64 scalar variable),
//                      finite (bool scalar) -> no outputs; mutates scale and good_steps in place:
//                        finite:  good_steps += 1; when good_steps >= growth_interval:
//                                 good_steps = 0 and scale *= factor (kept if the product would
//                                 not be finite)
//                        else:    scale = max(scale / factor, 1); good_steps = 0
//                      attrs: growth_interval (int >= 1, 2000), factor (float > 1, 2.0).
#include "tern/ops/families.h"
#include "tern/ops/infer.h"
#include "tern/ops/registry.h"

namespace tern::ops {
namespace {

std::vector<TensorType> infer_all_finite(const InferContext& ctx) {
  DType d = ctx.input(0).dtype;
  for (size_t i = 1; i < ctx.inputs.size(); ++i) {
    if (ctx.input(i).dtype != d) {
      ctx.fail("input ", i, " is ", dtype_name(ctx.input(i).dtype), " but input 0 is ",
               dtype_name(d), " (all inputs must share one float dtype)");
    }
  }
  return {TensorType{DType::kBool, Shape{}}};
}

void require_scalar(const InferContext& ctx, size_t i, std::string_view name, DType want) {
  const TensorType& t = ctx.input(i);
  if (t.shape.rank() != 0 || t.dtype != want) {
    ctx.fail(name, " (input ", i, ") must be a scalar of dtype ", dtype_name(want), ", got ",
             t.to_string());
  }
}

std::vector<TensorType> infer_loss_scale_update(const InferContext& ctx) {
  if (ctx.input(0).shape.rank() != 0) {
    ctx.fail("scale (input 0) must be a scalar, got ", ctx.input(0).to_string());
  }
  require_scalar(ctx, 1, "good_steps", DType::kI64);
  require_scalar(ctx, 2, "finite", DType::kBool);
  if (ctx.attrs.get_int("growth_interval") < 1) {
    ctx.fail("attribute growth_interval must be >= 1, got ", ctx.attrs.get_int("growth_interval"));
  }
  double factor = ctx.attrs.get_float("factor");
  if (!(factor > 1.0)) ctx.fail("attribute factor must be > 1, got ", factor);
  return {};
}

}  // namespace

void register_loss_scale_ops(OpRegistry& r) {
  r.add({.name = "all_finite",
         .family = "loss_scale",
         .doc = "True (bool scalar) when no element of any input is Inf or NaN.",
         .inputs = {"x"},
         .variadic = true,
         .min_inputs = 1,
         .dtypes = kFloatDTypes,
         .traits = kTraitNotDifferentiable,
         .infer = infer_all_finite});
  r.add({.name = "loss_scale_update",
         .family = "loss_scale",
         .doc = "Dynamic loss scale state update in place: grow scale by factor after "
                "growth_interval finite steps, shrink it (floor 1) and reset on a non-finite one.",
         .inputs = {"scale", "good_steps", "finite"},
         .attrs = {{"growth_interval", AttrKind::kInt, int64_t{2000}},
                   {"factor", AttrKind::kFloat, 2.0}},
         .dtypes = {DType::kF32, DType::kF64},
         .traits = kTraitMutatesInputs | kTraitStateful | kTraitNotDifferentiable,
         .infer = infer_loss_scale_update});
}

}  // namespace tern::ops
