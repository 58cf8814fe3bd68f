// softmax op family: softmax and log_softmax along one axis (+ their gradient helpers), and the
// fused losses: sparse_softmax_cross_entropy and softmax_cross_entropy return the per-example loss
// together with its gradient w.r.t. the logits from one pass; sigmoid_cross_entropy is elementwise.
#include "tern/ops/families.h"
#include "tern/ops/infer.h"
#include "tern/ops/registry.h"

namespace tern::ops {
namespace {

void require_axis(const InferContext& ctx, size_t i) {
  const Shape& s = ctx.input(i).shape;
  int64_t axis = ctx.attrs.get_int("axis");
  if (s.rank() == 0) ctx.fail("input ", i, " must have rank >= 1");
  if (axis < -s.rank() || axis >= s.rank()) {
    ctx.fail("axis ", axis, " is out of range for rank ", s.rank());
  }
}

std::vector<TensorType> infer_softmax(const InferContext& ctx) {
  require_axis(ctx, 0);
  return infer_same_as_input(ctx, 0);
}

// softmax_grad(dy, y) / log_softmax_grad(dy, y).
std::vector<TensorType> infer_softmax_grad(const InferContext& ctx) {
  require_same_type(ctx, 0, 1);
  require_axis(ctx, 0);
  return infer_same_as_input(ctx, 0);
}

// logits [N, C], labels [N] (i32/i64) -> loss [N], dlogits [N, C].
std::vector<TensorType> infer_sparse_xent(const InferContext& ctx) {
  const TensorType& logits = ctx.input(0);
  const TensorType& labels = ctx.input(1);
  require_rank(ctx, 0, 2);
  require_rank(ctx, 1, 1);
  if (labels.dtype != DType::kI32 && labels.dtype != DType::kI64) {
    ctx.fail("labels must be i32 or i64, got ", dtype_name(labels.dtype));
  }
  if (labels.shape[0] != logits.shape[0]) {
    ctx.fail("labels have ", labels.shape[0], " rows but logits have ", logits.shape[0]);
  }
  if (logits.shape[1] == 0) ctx.fail("logits need at least one class");
  return {{logits.dtype, Shape{logits.shape[0]}}, logits};
}

// logits [..., C], labels [..., C] -> loss [...], dlogits [..., C].
std::vector<TensorType> infer_xent(const InferContext& ctx) {
  require_same_type(ctx, 0, 1);
  const Shape& s = ctx.input(0).shape;
  if (s.rank() == 0) ctx.fail("logits must have rank >= 1 (classes on the last axis)");
  if (s[s.rank() - 1] == 0) ctx.fail("logits need at least one class");
  std::vector<int64_t> batch(s.dims().begin(), s.dims().end() - 1);
  return {{ctx.input(0).dtype, Shape(batch)}, ctx.input(0)};
}

std::vector<TensorType> infer_sigmoid_xent(const InferContext& ctx) {
  require_same_type(ctx, 0, 1);
  return infer_same_as_input(ctx, 0);
}

}  // namespace

void register_softmax_ops(OpRegistry& r) {
  const AttrSpec axis{"axis", AttrKind::kInt, int64_t{-1}};
  r.add({.name = "softmax",
         .family = "softmax",
         .doc = "exp(x - max) / sum(exp(x - max)) along `axis`.",
         .inputs = {"x"},
         .attrs = {axis},
         .dtypes = kFloatDTypes,
         .infer = infer_softmax});
  r.add({.name = "log_softmax",
         .family = "softmax",
         .doc = "x - max - log(sum(exp(x - max))) along `axis`.",
         .inputs = {"x"},
         .attrs = {axis},
         .dtypes = kFloatDTypes,
         .infer = infer_softmax});
  r.add({.name = "softmax_grad",
         .family = "softmax",
         .doc = "Gradient of softmax from its output y: y * (dy - sum(dy * y, axis)).",
         .inputs = {"dy", "y"},
         .attrs = {axis},
         .dtypes = kFloatDTypes,
         .traits = kTraitNotDifferentiable,
         .infer = infer_softmax_grad});
  r.add({.name = "log_softmax_grad",
         .family = "softmax",
         .doc = "Gradient of log_softmax from its output y: dy - exp(y) * sum(dy, axis).",
         .inputs = {"dy", "y"},
         .attrs = {axis},
         .dtypes = kFloatDTypes,
         .traits = kTraitNotDifferentiable,
         .infer = infer_softmax_grad});
  r.add({.name = "sparse_softmax_cross_entropy",
         .family = "softmax",
         .doc = "loss[n] = logsumexp(logits[n]) - logits[n, labels[n]] and dlogits = softmax - "
                "onehot(labels), in one pass. Out-of-range labels are an error.",
         .inputs = {"logits", "labels"},
         .dtypes = kFloatDTypes,
         .infer = infer_sparse_xent});
  r.add({.name = "softmax_cross_entropy",
         .family = "softmax",
         .doc = "loss = -sum(labels * log_softmax(logits), -1) and its exact gradient dlogits = "
                "softmax * sum(labels, -1) - labels (softmax - labels for distributions).",
         .inputs = {"logits", "labels"},
         .dtypes = kFloatDTypes,
         .infer = infer_xent});
  r.add({.name = "sigmoid_cross_entropy",
         .family = "softmax",
         .doc = "Elementwise max(x, 0) - x * z + log(1 + exp(-|x|)) for logits x, labels z.",
         .inputs = {"logits", "labels"},
         .dtypes = kFloatDTypes,
         .traits = kTraitElementwise,
         .infer = infer_sigmoid_xent});
}

}  // namespace tern::ops
