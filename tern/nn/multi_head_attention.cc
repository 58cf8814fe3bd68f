// MultiHeadAttention layer.
#include "tern/nn/multi_head_attention.h"

#include <cmath>
#include <functional>

namespace tern::nn {
namespace {

using Dims = std::vector<int64_t>;

ir::Value* reshape(ir::Graph& g, ir::Value* x, Dims shape, const std::string& name) {
  return g.add("reshape", {x}, {{"shape", std::move(shape)}}, name);
}

}  // namespace

MultiHeadAttentionLayer::MultiHeadAttentionLayer(int64_t num_heads, int64_t key_dim,
                                                 MultiHeadAttentionOptions options)
    : Layer(options.name.empty() ? default_layer_name("multi_head_attention") : options.name),
      num_heads_(num_heads),
      key_dim_(key_dim),
      value_dim_(options.value_dim > 0 ? options.value_dim : key_dim),
      options_(std::move(options)) {
  TERN_CHECK_ARG(num_heads_ > 0 && key_dim_ > 0, "MultiHeadAttention layer '", name(),
                 "': num_heads and key_dim must be positive, got ", num_heads_, " and ", key_dim_);
  TERN_CHECK_ARG(options_.value_dim >= 0 && options_.output_dim >= 0, "MultiHeadAttention layer '",
                 name(), "': value_dim and output_dim must be positive (or 0 for the default)");
  TERN_CHECK_ARG(options_.dropout >= 0 && options_.dropout < 1, "MultiHeadAttention layer '",
                 name(), "': dropout must be in [0, 1), got ", options_.dropout);
  runtime::init::by_name(options_.kernel_initializer);
  runtime::init::by_name(options_.bias_initializer);
  if (options_.seed < 0) {
    options_.seed = static_cast<int64_t>(std::hash<std::string>()(name()) & 0x7fffffff);
  }
}

MultiHeadAttentionLayer::Positions MultiHeadAttentionLayer::positions(size_t n,
                                                                      bool last_is_bool) const {
  Positions p;
  size_t tensors = n - (last_is_bool ? 1 : 0);
  if (n == 0 || tensors == 0 || tensors > 3) {
    throw_error(ErrorCode::kInvalidArgument, "MultiHeadAttention layer '", name(),
                "' expects inputs (query[, value[, key]][, attention_mask]), got ", n, " inputs",
                tensors == 0 && n > 0 ? " (a bool mask but no query)" : "");
  }
  p.value = tensors >= 2 ? 1 : 0;
  p.key = tensors == 3 ? 2 : p.value;
  if (last_is_bool) p.mask = static_cast<int>(n - 1);
  return p;
}

MultiHeadAttentionLayer::Projection MultiHeadAttentionLayer::add_projection(
    WeightBuilder& w, const std::string& scope, const Shape& kernel, const Shape& bias) {
  Projection p;
  std::string k =
      w.add(scope + "/kernel", kernel, runtime::init::by_name(options_.kernel_initializer));
  p.kernel = {k, {DType::kF32, kernel}, true};
  if (options_.use_bias) {
    std::string b = w.add(scope + "/bias", bias, runtime::init::by_name(options_.bias_initializer));
    p.bias = {b, {DType::kF32, bias}, true};
  }
  return p;
}

void MultiHeadAttentionLayer::build(WeightBuilder& w, std::span<const TensorType> inputs) {
  Positions pos = positions(inputs.size(), !inputs.empty() && inputs.back().dtype == DType::kBool);
  auto features = [&](int i, const char* what) {
    const Shape& s = inputs[static_cast<size_t>(i)].shape;
    TERN_CHECK_ARG(s.rank() == 3, "MultiHeadAttention layer '", name(), "': ", what,
                   " must be [batch, seq, features], got ", s);
    return s.dim(2);
  };
  int64_t dq = features(pos.query, "query"), dv = features(pos.value, "value");
  int64_t dk = features(pos.key, "key");
  output_dim_ = options_.output_dim > 0 ? options_.output_dim : dq;
  int64_t h = num_heads_;
  query_ = add_projection(w, "query", Shape{dq, h, key_dim_}, Shape{h, key_dim_});
  key_ = add_projection(w, "key", Shape{dk, h, key_dim_}, Shape{h, key_dim_});
  value_ = add_projection(w, "value", Shape{dv, h, value_dim_}, Shape{h, value_dim_});
  output_ =
      add_projection(w, "attention_output", Shape{h, value_dim_, output_dim_}, Shape{output_dim_});
}

ir::Value* MultiHeadAttentionLayer::project_in(ir::Graph& g, const LayerContext& ctx, ir::Value* x,
                                               const Projection& p, int64_t dim,
                                               const std::string& tag) const {
  const Shape& s = x->shape();
  int64_t b = s.dim(0), len = s.dim(1), d = s.dim(2);
  if (d != p.kernel.type.shape.dim(0)) {
    throw_error(ErrorCode::kInvalidArgument, "MultiHeadAttention layer '", name(),
                "' was built for ", tag, " with ", p.kernel.type.shape.dim(0), " features, got ",
                s);
  }
  std::string scope = name() + "/" + tag;
  ir::Value* w = reshape(g, ctx.read(p.kernel), {d, num_heads_ * dim}, scope + "/kernel_2d");
  ir::Value* y =
      g.add("matmul", {reshape(g, x, {reshape_batch_dim(b * len), d}, scope + "/rows"), w}, {},
            scope + "/matmul");
  if (options_.use_bias) {
    y = g.add("add", {y, reshape(g, ctx.read(p.bias), {num_heads_ * dim}, scope + "/bias_1d")}, {},
              scope + "/bias_add");
  }
  return reshape(g, y, {reshape_batch_dim(b), len, num_heads_, dim}, scope + "/heads");
}

ir::Value* MultiHeadAttentionLayer::combined_mask(ir::Graph& g, ir::Value* mask, int64_t t,
                                                  int64_t s) const {
  if (!options_.use_causal_mask) return mask;
  Tensor causal(DType::kBool, Shape{t, s});
  for (int64_t i = 0; i < t; ++i) {
    for (int64_t j = 0; j < s; ++j) causal.set(i * s + j, i >= j ? 1 : 0);
  }
  ir::Value* c = g.constant(causal, name() + "/causal_mask");
  return mask ? g.add("logical_and", {mask, c}, {}, name() + "/combined_mask") : c;
}

// The fused form: one attention op on the [B, L, H, dim] heads, its output [B, T, H, V].
ir::Value* MultiHeadAttentionLayer::attend_fused(LayerContext& ctx, ir::Value* q, ir::Value* k,
                                                 ir::Value* v, ir::Value* mask) const {
  ir::Graph& g = ctx.graph;
  const bool dropout = ctx.training && options_.dropout > 0;
  TERN_CHECK_ARG(!dropout || ctx.rng_offset != nullptr, "MultiHeadAttention layer '", name(),
                 "': training graph has no rng offset");
  std::vector<ir::Value*> in = {q, k, v, dropout ? ctx.rng_offset : g.scalar(DType::kI64, 0)};
  if (mask) in.push_back(mask);
  return g.add("attention", in,
               {{"scale", 1.0 / std::sqrt(static_cast<double>(key_dim_))},
                {"rate", dropout ? options_.dropout : 0.0},
                {"seed", options_.seed},
                {"causal", options_.use_causal_mask},
                {"save_probs", ctx.training}},
               name() + "/attention");
}

// The unfused form: heads transposed to [B, H, L, dim], matmuls, where, softmax, dropout, and the
// result transposed back to [B, T, H, V].
ir::Value* MultiHeadAttentionLayer::attend_unfused(LayerContext& ctx, ir::Value* q, ir::Value* k,
                                                   ir::Value* v, ir::Value* mask) const {
  ir::Graph& g = ctx.graph;
  const int64_t b = q->shape().dim(0), t = q->shape().dim(1), s = k->shape().dim(1);
  auto heads_first = [&](ir::Value* x, const char* tag) {
    return g.add("transpose", {x}, {{"perm", Dims{0, 2, 1, 3}}}, name() + "/" + tag + "/transpose");
  };
  q = heads_first(q, "query");
  k = heads_first(k, "key");
  v = heads_first(v, "value");
  q = g.add("mul", {q, g.scalar(q->dtype(), 1.0 / std::sqrt(static_cast<double>(key_dim_)))}, {},
            name() + "/scale");
  // [B, H, T, K] x [B, H, S, K]^T -> [B, H, T, S]
  ir::Value* scores = g.add("matmul", {q, k}, {{"transpose_b", true}}, name() + "/scores");
  if (mask) {  // [B, T, S] -> [B, 1, T, S]; a causal-only [T, S] mask broadcasts as it is
    if (mask->shape().rank() == 3) {
      mask = reshape(g, mask, {reshape_batch_dim(b), 1, t, s}, name() + "/mask");
    }
    scores =
        g.add("where", {mask, scores, g.scalar(scores->dtype(), -1e9)}, {}, name() + "/masked");
  }
  ir::Value* probs = g.add("softmax", {scores}, {{"axis", int64_t{-1}}}, name() + "/softmax");
  if (ctx.training && options_.dropout > 0) {
    TERN_CHECK_ARG(ctx.rng_offset != nullptr, "MultiHeadAttention layer '", name(),
                   "': training graph has no rng offset");
    probs = g.add("dropout", {probs, ctx.rng_offset},
                  {{"rate", options_.dropout}, {"seed", options_.seed}}, name() + "/dropout");
  }
  // [B, H, T, S] x [B, H, S, V] -> [B, H, T, V] -> [B, T, H, V]
  ir::Value* o = g.add("matmul", {probs, v}, {}, name() + "/context");
  return g.add("transpose", {o}, {{"perm", Dims{0, 2, 1, 3}}}, name() + "/merge_transpose");
}

std::vector<ir::Value*> MultiHeadAttentionLayer::call(LayerContext& ctx,
                                                      std::span<ir::Value* const> inputs) {
  Positions pos =
      positions(inputs.size(), !inputs.empty() && inputs.back()->dtype() == DType::kBool);
  ir::Graph& g = ctx.graph;
  ir::Value* query = inputs[static_cast<size_t>(pos.query)];
  ir::Value* value = inputs[static_cast<size_t>(pos.value)];
  ir::Value* key = inputs[static_cast<size_t>(pos.key)];
  for (ir::Value* v : {query, value, key}) {
    TERN_CHECK_ARG(v->shape().rank() == 3, "MultiHeadAttention layer '", name(),
                   "': inputs must be [batch, seq, features], got ", v->shape());
  }
  int64_t b = query->shape().dim(0), t = query->shape().dim(1), s = value->shape().dim(1);
  if (key->shape().dim(1) != s || value->shape().dim(0) != b || key->shape().dim(0) != b) {
    throw_error(ErrorCode::kInvalidArgument, "MultiHeadAttention layer '", name(),
                "': query, value and key must share the batch size and value/key the sequence "
                "length, got ",
                query->shape(), ", ", value->shape(), " and ", key->shape());
  }
  ir::Value* q = project_in(g, ctx, query, query_, key_dim_, "query");
  ir::Value* k = project_in(g, ctx, key, key_, key_dim_, "key");
  ir::Value* v = project_in(g, ctx, value, value_, value_dim_, "value");
  ir::Value* mask = nullptr;
  if (pos.mask >= 0) {
    mask = inputs[static_cast<size_t>(pos.mask)];
    if (mask->shape() != Shape{b, t, s}) {
      throw_error(ErrorCode::kInvalidArgument, "MultiHeadAttention layer '", name(),
                  "': attention_mask must be bool ", Shape{b, t, s}, " [batch, T, S], got ",
                  mask->shape());
    }
  }
  ir::Value* o;
  if (options_.fused) {  // the causal mask is the op's attribute
    o = attend_fused(ctx, q, k, v, mask);
  } else {
    o = attend_unfused(ctx, q, k, v, combined_mask(g, mask, t, s));
  }
  o = reshape(g, o, {reshape_batch_dim(b * t), num_heads_ * value_dim_}, name() + "/merge_heads");
  ir::Value* wo = reshape(g, ctx.read(output_.kernel), {num_heads_ * value_dim_, output_dim_},
                          name() + "/attention_output/kernel_2d");
  ir::Value* y = g.add("matmul", {o, wo}, {}, name() + "/attention_output/matmul");
  if (options_.use_bias) {
    y = g.add("add", {y, ctx.read(output_.bias)}, {}, name() + "/attention_output/bias_add");
  }
  return {reshape(g, y, {reshape_batch_dim(b), t, output_dim_}, name() + "/output")};
}

std::string MultiHeadAttentionLayer::describe() const {
  return str_cat("num_heads=", num_heads_, ", key_dim=", key_dim_, ", value_dim=", value_dim_);
}

LayerRef MultiHeadAttention(int64_t num_heads, int64_t key_dim, MultiHeadAttentionOptions options) {
  return LayerRef(
      std::make_shared<MultiHeadAttentionLayer>(num_heads, key_dim, std::move(options)));
}

}  // namespace tern::nn
