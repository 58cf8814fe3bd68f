// norm op family. Batch norm normalizes over every axis but the last (channels, NHWC): training
// returns the batch mean and biased variance [C]; inference uses given statistics. Layer norm
// normalizes over the last axis and returns mean and rstd = 1/sqrt(var + epsilon) of shape x[:-1].
// The *_grad ops compute all input gradients of the training-mode forward in one kernel.
// batch_norm_training and batch_norm_grad also take bf16 or f16 activations (x, dy) with f32
// gamma, beta and statistics (the mixed-precision form): y and dx take x's dtype, the [C] outputs
// stay f32. batch_norm_training with activation = "relu" returns relu(y) (the relu folded into
// its output pass); batch_norm_grad with activation = "relu" takes that output as a sixth input y
// and uses dy where y > 0, else 0 (relu_grad(dy, y) folded into its passes). batch_norm_training
// may take a fourth input, a residual of x's type added to the normalized value (rounded to x's
// dtype first, as the add after it would see it) before the activation: a ResNet block's
// add(bn(x), shortcut) (and relu) in the normalization's output pass. Only y changes: the
// statistics outputs are the batch's either way.
#include "tern/ops/families.h"
#include "tern/ops/infer.h"
#include "tern/ops/registry.h"

namespace tern::ops {
namespace {

void require_epsilon(const InferContext& ctx) {
  double eps = ctx.attrs.get_float("epsilon");
  if (!(eps >= 0)) ctx.fail("epsilon must be >= 0, got ", eps);
}

// Inputs `first..last` must be [C] vectors matching the last dim of input `x` and its dtype.
void require_channel_vectors(const InferContext& ctx, size_t x, size_t first, size_t last) {
  const Shape& s = ctx.input(x).shape;
  if (s.rank() == 0) ctx.fail("input ", x, " must have rank >= 1 (channels on the last axis)");
  int64_t c = s[s.rank() - 1];
  for (size_t i = first; i <= last; ++i) {
    require_same_dtype(ctx, x, i);
    if (ctx.input(i).shape != Shape{c}) {
      ctx.fail("input ", i, " must have shape [", c, "] (the last dim of input ", x, "), got ",
               ctx.input(i).shape);
    }
  }
}

// Like require_channel_vectors, but inputs `first..last` may instead all be f32 when input `x` is
// bf16 or f16 (16-bit activations, f32 parameters and statistics). Returns their dtype.
DType require_mixed_channel_vectors(const InferContext& ctx, size_t x, size_t first, size_t last) {
  DType xd = ctx.input(x).dtype, pd = ctx.input(first).dtype;
  if (pd != xd && !(pd == DType::kF32 && (xd == DType::kBF16 || xd == DType::kF16))) {
    ctx.fail("input ", first, " is ", dtype_name(pd), " but input ", x, " is ", dtype_name(xd),
             ": gamma, beta and statistics must have x's dtype, or be f32 for bf16/f16 x");
  }
  const Shape& s = ctx.input(x).shape;
  if (s.rank() == 0) ctx.fail("input ", x, " must have rank >= 1 (channels on the last axis)");
  int64_t c = s[s.rank() - 1];
  for (size_t i = first; i <= last; ++i) {
    require_same_dtype(ctx, first, i);
    if (ctx.input(i).shape != Shape{c}) {
      ctx.fail("input ", i, " must have shape [", c, "] (the last dim of input ", x, "), got ",
               ctx.input(i).shape);
    }
  }
  return pd;
}

TensorType channel_type(const InferContext& ctx, DType dtype) {
  const Shape& s = ctx.input(0).shape;
  return {dtype, Shape{s[s.rank() - 1]}};
}

// The folded activation: "none" or "relu".
bool require_activation(const InferContext& ctx) {
  const std::string& a = ctx.attrs.get_string("activation");
  if (a != "none" && a != "relu")
    ctx.fail("activation must be \"none\" or \"relu\", got \"", a, "\"");
  return a == "relu";
}

// x, gamma, beta[, residual] -> y, mean [C], var [C].
std::vector<TensorType> infer_batch_norm_training(const InferContext& ctx) {
  require_epsilon(ctx);
  require_activation(ctx);
  if (ctx.inputs.size() > 4) {
    ctx.fail("3 inputs (x, gamma, beta) or 4 (x, gamma, beta, residual), got ", ctx.inputs.size());
  }
  if (ctx.inputs.size() == 4) require_same_type(ctx, 0, 3);
  DType pd = require_mixed_channel_vectors(ctx, 0, 1, 2);
  return {ctx.input(0), channel_type(ctx, pd), channel_type(ctx, pd)};
}

// x, gamma, beta, mean, var -> y.
std::vector<TensorType> infer_batch_norm_inference(const InferContext& ctx) {
  require_epsilon(ctx);
  require_channel_vectors(ctx, 0, 1, 4);
  return {ctx.input(0)};
}

// dy, x, gamma, mean, var[, y] -> dx, dgamma, dbeta (y with activation = "relu" only).
std::vector<TensorType> infer_batch_norm_grad(const InferContext& ctx) {
  require_epsilon(ctx);
  const bool relu = require_activation(ctx);
  if (ctx.inputs.size() != (relu ? 6u : 5u)) {
    ctx.fail(relu ? "activation \"relu\" needs 6 inputs (dy, x, gamma, mean, var, y), got "
                  : "5 inputs (dy, x, gamma, mean, var) without an activation, got ",
             ctx.inputs.size());
  }
  require_same_type(ctx, 0, 1);
  if (relu) require_same_type(ctx, 0, 5);
  require_mixed_channel_vectors(ctx, 1, 2, 4);
  return {ctx.input(1), ctx.input(2), ctx.input(2)};
}

// x, gamma, beta -> y, mean x[:-1], rstd x[:-1].
std::vector<TensorType> infer_layer_norm(const InferContext& ctx) {
  require_epsilon(ctx);
  require_channel_vectors(ctx, 0, 1, 2);
  const Shape& s = ctx.input(0).shape;
  TensorType rows{ctx.input(0).dtype,
                  Shape(std::vector<int64_t>(s.dims().begin(), s.dims().end() - 1))};
  return {ctx.input(0), rows, rows};
}

// dy, x, gamma, mean, rstd -> dx, dgamma, dbeta.
std::vector<TensorType> infer_layer_norm_grad(const InferContext& ctx) {
  require_same_type(ctx, 0, 1);
  require_channel_vectors(ctx, 1, 2, 2);
  const Shape& s = ctx.input(1).shape;
  Shape rows(std::vector<int64_t>(s.dims().begin(), s.dims().end() - 1));
  for (size_t i = 3; i <= 4; ++i) {
    require_same_dtype(ctx, 1, i);
    if (ctx.input(i).shape != rows) {
      ctx.fail("input ", i, " must have shape ", rows, " (input 1 without its last dim), got ",
               ctx.input(i).shape);
    }
  }
  return {ctx.input(1), ctx.input(2), ctx.input(2)};
}

}  // namespace

void register_norm_ops(OpRegistry& r) {
  const AttrSpec epsilon{"epsilon", AttrKind::kFloat, 1e-3};
  const AttrSpec activation{"activation", AttrKind::kString, std::string("none")};
  r.add({.name = "batch_norm_training",
         .family = "norm",
         .doc = "Normalizes with the batch statistics over all axes but the last, adds the "
                "residual if given, then relu with activation = \"relu\"; also returns the batch "
                "mean and biased variance per channel.",
         .inputs = {"x", "gamma", "beta", "residual"},
         .variadic = true,
         .min_inputs = 3,
         .attrs = {epsilon, activation},
         .dtypes = kFloatDTypes,
         .infer = infer_batch_norm_training});
  r.add({.name = "batch_norm_inference",
         .family = "norm",
         .doc = "(x - mean) / sqrt(var + epsilon) * gamma + beta per channel (last axis).",
         .inputs = {"x", "gamma", "beta", "mean", "var"},
         .attrs = {epsilon},
         .dtypes = kFloatDTypes,
         .infer = infer_batch_norm_inference});
  r.add({.name = "batch_norm_grad",
         .family = "norm",
         .doc = "dx, dgamma, dbeta of batch_norm_training from dy and the saved batch statistics "
                "(with activation = \"relu\", of the relu'd form: dy counts where its output y "
                "> 0).",
         .inputs = {"dy", "x", "gamma", "mean", "var", "y"},
         .variadic = true,
         .min_inputs = 5,
         .attrs = {epsilon, activation},
         .dtypes = kFloatDTypes,
         .traits = kTraitNotDifferentiable,
         .infer = infer_batch_norm_grad});
  r.add({.name = "layer_norm",
         .family = "norm",
         .doc = "Normalizes over the last axis, then * gamma + beta; also returns the row mean "
                "and rstd = 1 / sqrt(var + epsilon).",
         .inputs = {"x", "gamma", "beta"},
         .attrs = {epsilon},
         .dtypes = kFloatDTypes,
         .infer = infer_layer_norm});
  r.add({.name = "layer_norm_grad",
         .family = "norm",
         .doc = "dx, dgamma, dbeta of layer_norm from dy and the saved row mean and rstd.",
         .inputs = {"dy", "x", "gamma", "mean", "rstd"},
         .dtypes = kFloatDTypes,
         .traits = kTraitNotDifferentiable,
         .infer = infer_layer_norm_grad});
}

}  // namespace tern::ops
