// PositionEmbedding: a learned vector per sequence position (keras_hub's PositionEmbedding).
// Returns the embeddings of positions 0..seq-1 broadcast to the input's shape; add them to the
// token embeddings with Add.
//   input  [batch, seq, d] (seq <= sequence_length)
//   embeddings [sequence_length, d] (glorot_uniform, as keras_hub)
//   output [batch, seq, d] (output[b, s, :] = embeddings[s, :])
#pragma once

#include "tern/nn/model.h"

namespace tern::nn {

class PositionEmbeddingLayer : public Layer {
 public:
  PositionEmbeddingLayer(int64_t sequence_length, std::string initializer, std::string name);
  std::string type_name() const override { return "PositionEmbedding"; }
  void build(WeightBuilder& w, std::span<const TensorType> inputs) override;
  std::vector<ir::Value*> call(LayerContext& ctx, std::span<ir::Value* const> inputs) override;
  std::string describe() const override { return str_cat("sequence_length=", sequence_length_); }

 private:
  int64_t sequence_length_;
  std::string initializer_;
  WeightSpec embeddings_;
};

LayerRef PositionEmbedding(int64_t sequence_length,
                           const std::string& initializer = "glorot_uniform",
                           const std::string& name = "");

}  // namespace tern::nn
