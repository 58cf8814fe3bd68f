// attention op family: scaled dot-product attention over heads in one op, and its gradient.
//
// attention(q [B, T, H, D], k [B, S, H, D], v [B, S, H, Dv], offset[, mask [B, T, S] bool])
//   scores = scale * q . k^T per (batch, head) -> [B, H, T, S]; masked-out scores (mask false, or
//   s > t with `causal`) become -1e9 (as where(mask, scores, -1e9)); probs = softmax(scores);
//   with rate > 0, dropout of probs exactly as the dropout op draws it over the [B, H, T, S]
//   tensor (element e kept iff word e % 4 of Philox(seed)(e / 4, offset) >= rate * 2^32, scaled
//   by 1 / (1 - rate)); out = probs . v, written as [B, T, H, Dv].
// So the op is the MultiHeadAttention graph (transposes to [B, H, ., .], scale, matmul, where,
// softmax, dropout, matmul, transpose back) in one node: heads are read in place from the
// projections' [B, S, H, D] layout, and a fast kernel keeps each head's [T, S] block in cache
// from the scores to the product with v. With save_probs (training graphs) it also returns what
// its gradient reads: the softmax before dropout, f32 for every input dtype (an f64 graph's
// gradient is then good to ~1e-7 relative), and dropout's packed mask (bit e % 32 of word e / 32
// set iff element e was kept; empty without dropout). Without save_probs both are empty.
// attention_grad(dout, q, k, v, probs, dropout_mask[, mask]) -> dq, dk, dv.
#include "tern/ops/attention_geometry.h"
#include "tern/ops/families.h"
#include "tern/ops/infer.h"
#include "tern/ops/registry.h"

namespace tern::ops {
namespace {

// The shared checks of q, k, v (inputs 0-2 of attention, 1-3 of attention_grad) and the mask.
AttentionGeometry check_heads(const InferContext& ctx, size_t first) {
  const TensorType &q = ctx.input(first), &k = ctx.input(first + 1), &v = ctx.input(first + 2);
  for (size_t i = first; i < first + 3; ++i) require_rank(ctx, i, 4);
  require_same_dtype(ctx, first, first + 1);
  require_same_dtype(ctx, first, first + 2);
  if (k.shape[0] != q.shape[0] || v.shape[0] != q.shape[0] || k.shape[2] != q.shape[2] ||
      v.shape[2] != q.shape[2] || k.shape[3] != q.shape[3] || v.shape[1] != k.shape[1]) {
    ctx.fail("q [B, T, H, D], k [B, S, H, D] and v [B, S, H, Dv] must agree on B, H, D and S, got ",
             q.shape, ", ", k.shape, " and ", v.shape);
  }
  AttentionGeometry g(q.shape, v.shape, ctx.attrs);
  if (!(g.rate >= 0.0 && g.rate < 1.0)) ctx.fail("rate must be in [0, 1), got ", g.rate);
  return g;
}

void check_mask(const InferContext& ctx, size_t i, const AttentionGeometry& d) {
  if (ctx.inputs.size() <= i) return;
  if (ctx.inputs.size() > i + 1) ctx.fail("takes at most ", i + 1, " inputs");
  const TensorType want{DType::kBool, Shape{d.b, d.t, d.s}};
  if (ctx.input(i) != want) {
    ctx.fail("mask must be ", want.to_string(), " [batch, T, S], got ", ctx.input(i).to_string());
  }
}

std::vector<TensorType> infer_attention(const InferContext& ctx) {
  AttentionGeometry d = check_heads(ctx, 0);
  const TensorType& offset = ctx.input(3);
  if (offset.dtype != DType::kI64 || offset.shape.rank() != 0) {
    ctx.fail("offset must be an i64 scalar, got ", offset.to_string());
  }
  check_mask(ctx, 4, d);
  const bool save = ctx.attrs.get_bool("save_probs");
  const bool dropout = d.rate > 0;
  DType x = ctx.input(0).dtype;
  return {{x, Shape{d.b, d.t, d.h, d.dv}},
          {DType::kF32, save ? Shape{d.b, d.h, d.t, d.s} : Shape{0}},
          {DType::kI32, save && dropout ? Shape{d.mask_words()} : Shape{0}}};
}

std::vector<TensorType> infer_attention_grad(const InferContext& ctx) {
  AttentionGeometry d = check_heads(ctx, 1);
  const TensorType want_dout{ctx.input(1).dtype, Shape{d.b, d.t, d.h, d.dv}};
  if (ctx.input(0) != want_dout) {
    ctx.fail("dout must be ", want_dout.to_string(), ", got ", ctx.input(0).to_string());
  }
  const TensorType want_probs{DType::kF32, Shape{d.b, d.h, d.t, d.s}};
  if (ctx.input(4) != want_probs) {
    ctx.fail("probs must be ", want_probs.to_string(),
             " (attention's second output, saved with save_probs), got ", ctx.input(4).to_string());
  }
  const TensorType want_mask{DType::kI32, Shape{d.rate > 0 ? d.mask_words() : 0}};
  if (ctx.input(5) != want_mask) {
    ctx.fail("dropout_mask must be ", want_mask.to_string(), " (attention's third output), got ",
             ctx.input(5).to_string());
  }
  check_mask(ctx, 6, d);
  if (!ctx.attrs.get_bool("bias_sums")) return {ctx.input(1), ctx.input(2), ctx.input(3)};
  return {ctx.input(1),
          ctx.input(2),
          ctx.input(3),
          {DType::kF32, Shape{d.h, d.d}},
          {DType::kF32, Shape{d.h, d.d}},
          {DType::kF32, Shape{d.h, d.dv}}};
}

}  // namespace

void register_attention_ops(OpRegistry& r) {
  // The gradient reads dropout's mask, not its seed.
  std::vector<AttrSpec> attrs = {{"scale", AttrKind::kFloat, std::nullopt},
                                 {"rate", AttrKind::kFloat, 0.0},
                                 {"causal", AttrKind::kBool, false}};
  std::vector<AttrSpec> forward_attrs = attrs;
  std::vector<AttrSpec> grad_attrs = attrs;
  grad_attrs.push_back({"bias_sums", AttrKind::kBool, false});
  forward_attrs.push_back({"seed", AttrKind::kInt, int64_t{0}});
  forward_attrs.push_back({"save_probs", AttrKind::kBool, true});
  r.add({.name = "attention",
         .family = "attention",
         .doc = "Scaled dot-product attention over heads: softmax(scale * q k^T, masked) with "
                "dropout (as the dropout op over [B, H, T, S]) times v; q [B, T, H, D], k "
                "[B, S, H, D], v [B, S, H, Dv] -> [B, T, H, Dv]. With save_probs also the softmax "
                "(f32) and dropout's packed mask, for attention_grad.",
         .inputs = {"q", "k", "v", "offset", "mask"},
         .variadic = true,
         .min_inputs = 4,
         .attrs = forward_attrs,
         .dtypes = kFloatDTypes,
         .infer = infer_attention});
  r.add({.name = "attention_grad",
         .family = "attention",
         .doc = "Gradients of attention w.r.t. q, k and v from dout and what attention saved "
                "(probs, dropout_mask). With bias_sums, also each gradient summed over batch and "
                "time, [H, D] in f32: the q, k and v projections' bias gradients "
                "(fuse_column_sum).",
         .inputs = {"dout", "q", "k", "v", "probs", "dropout_mask", "mask"},
         .variadic = true,
         .min_inputs = 6,
         .attrs = grad_attrs,
         .dtypes = kFloatDTypes,
         .traits = kTraitNotDifferentiable,
         .infer = infer_attention_grad});
}

}  // namespace tern::ops
