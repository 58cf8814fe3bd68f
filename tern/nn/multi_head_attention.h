// MultiHeadAttention (Keras semantics, scaled dot-product attention over `num_heads` heads).
//   inputs: query [batch, T, dq], value [batch, S, dv] (optional: self-attention on query),
//           key [batch, S, dk] (optional: key = value),
//           attention_mask bool [batch, T, S] (optional, last; true = attend)
//   weights (Keras' EinsumDense shapes; glorot_uniform kernels, zero biases):
//     query/kernel [dq, H, K], query/bias [H, K]     key/kernel [dk, H, K], key/bias [H, K]
//     value/kernel [dv, H, V], value/bias [H, V]     attention_output/kernel [H, V, out],
//                                                     attention_output/bias [out]
//     H = num_heads, K = key_dim, V = value_dim (default K), out = output_dim (default dq)
//   output [batch, T, out]
// Per head h: q_h = query Wq_h / sqrt(K), k_h = key Wk_h, v_h = value Wv_h,
//   p_h = softmax(q_h k_h^T) over S (masked scores set to -1e9, as Keras' masked softmax),
//   o_h = dropout(p_h) v_h;  output = concat_h(o_h) Wo + bo.
// The scores, softmax, dropout and the probabilities' product with v run as one `attention` op
// (tern/ops/attention_ops.cc), which reads the heads in the projections' [batch, L, H, dim] layout;
// with `fused = false` the layer builds the same computation from matmul / transpose / softmax
// (+ where, dropout) ops instead (same dropout mask; for comparison).
#pragma once

#include "tern/nn/model.h"

namespace tern::nn {

struct MultiHeadAttentionOptions {
  int64_t value_dim = 0;   // 0: key_dim
  int64_t output_dim = 0;  // 0: the query's feature dim (Keras' output_shape)
  double dropout = 0.0;    // on the attention probabilities, training only
  bool use_bias = true;
  bool use_causal_mask = false;  // also mask key positions after the query position
  std::string kernel_initializer = "glorot_uniform";
  std::string bias_initializer = "zeros";
  int64_t seed = -1;  // dropout seed; < 0: derived from the layer name
  bool fused = true;  // one attention op; false: matmul / softmax / dropout ops
  std::string name = "";
};

class MultiHeadAttentionLayer : public Layer {
 public:
  MultiHeadAttentionLayer(int64_t num_heads, int64_t key_dim, MultiHeadAttentionOptions options);
  std::string type_name() const override { return "MultiHeadAttention"; }
  void build(WeightBuilder& w, std::span<const TensorType> inputs) override;
  std::vector<ir::Value*> call(LayerContext& ctx, std::span<ir::Value* const> inputs) override;
  std::string describe() const override;

 private:
  struct Projection {
    WeightSpec kernel, bias;
  };
  // Positions of query, value, key and mask among `n` inputs (the mask, a bool tensor, is the
  // last when present; key defaults to value, value to query; -1: no mask).
  struct Positions {
    int query = 0, value = 0, key = 0, mask = -1;
  };
  Positions positions(size_t n, bool last_is_bool) const;
  Projection add_projection(WeightBuilder& w, const std::string& scope, const Shape& kernel,
                            const Shape& bias);
  // x [B, L, d] -> [B, L, heads, dim] through an input projection.
  ir::Value* project_in(ir::Graph& g, const LayerContext& ctx, ir::Value* x, const Projection& p,
                        int64_t dim, const std::string& tag) const;
  // The user's mask and'ed with the causal one (use_causal_mask), as a bool [T, S] or [B, T, S].
  ir::Value* combined_mask(ir::Graph& g, ir::Value* mask, int64_t t, int64_t s) const;
  // q [B, T, H, K], k [B, S, H, K], v [B, S, H, V], mask [B, T, S] or null -> [B, T, H, V].
  ir::Value* attend_fused(LayerContext& ctx, ir::Value* q, ir::Value* k, ir::Value* v,
                          ir::Value* mask) const;
  ir::Value* attend_unfused(LayerContext& ctx, ir::Value* q, ir::Value* k, ir::Value* v,
                            ir::Value* mask) const;

  int64_t num_heads_, key_dim_, value_dim_;
  MultiHeadAttentionOptions options_;
  int64_t output_dim_ = 0;
  Projection query_, key_, value_, output_;
};

LayerRef MultiHeadAttention(int64_t num_heads, int64_t key_dim,
                            MultiHeadAttentionOptions options = {});

}  // namespace tern::nn
