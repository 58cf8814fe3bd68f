// Embedding: maps integer ids to dense vectors, out[i..., :] = embeddings[ids[i...], :].
//   input  [batch, ...] ids (i32/i64; floating ids are cast to i64, as Keras casts to int)
//   embeddings [input_dim, output_dim] (uniform in [-0.05, 0.05], Keras' "uniform")
//   output [batch, ..., output_dim]
// An id outside [0, input_dim) is an error when the step runs (the embedding op checks).
#pragma once

#include "tern/nn/model.h"

namespace tern::nn {

struct EmbeddingOptions {
  std::string embeddings_initializer = "";  // empty: uniform(-0.05, 0.05)
  std::string name = "";
};

class EmbeddingLayer : public Layer {
 public:
  EmbeddingLayer(int64_t input_dim, int64_t output_dim, EmbeddingOptions options);
  std::string type_name() const override { return "Embedding"; }
  void build(WeightBuilder& w, std::span<const TensorType> inputs) override;
  std::vector<ir::Value*> call(LayerContext& ctx, std::span<ir::Value* const> inputs) override;
  std::string describe() const override;

 private:
  int64_t input_dim_, output_dim_;
  EmbeddingOptions options_;
  WeightSpec embeddings_;
};

LayerRef Embedding(int64_t input_dim, int64_t output_dim, EmbeddingOptions options = {});

}  // namespace tern::nn
