// Embedding layer.
#include "tern/nn/embedding.h"

namespace tern::nn {

EmbeddingLayer::EmbeddingLayer(int64_t input_dim, int64_t output_dim, EmbeddingOptions options)
    : Layer(options.name.empty() ? default_layer_name("embedding") : options.name),
      input_dim_(input_dim),
      output_dim_(output_dim),
      options_(std::move(options)) {
  TERN_CHECK_ARG(input_dim_ > 0 && output_dim_ > 0, "Embedding layer '", name(),
                 "': input_dim and output_dim must be positive, got ", input_dim_, " and ",
                 output_dim_);
}

void EmbeddingLayer::build(WeightBuilder& w, std::span<const TensorType> inputs) {
  TERN_CHECK_ARG(inputs[0].shape.rank() >= 1, "Embedding layer '", name(),
                 "' needs a batch dimension, got ", inputs[0].shape);
  Shape s{input_dim_, output_dim_};
  runtime::init::Initializer init = options_.embeddings_initializer.empty()
                                        ? runtime::init::random_uniform(-0.05, 0.05)
                                        : runtime::init::by_name(options_.embeddings_initializer);
  embeddings_ = {w.add("embeddings", s, init), {DType::kF32, s}, true};
}

std::vector<ir::Value*> EmbeddingLayer::call(LayerContext& ctx,
                                             std::span<ir::Value* const> inputs) {
  ir::Value* ids = single_input(*this, inputs);
  ir::Graph& g = ctx.graph;
  if (ids->dtype() != DType::kI32 && ids->dtype() != DType::kI64) {
    if (!is_floating(ids->dtype())) {
      throw_error(ErrorCode::kInvalidArgument, "Embedding layer '", name(),
                  "' needs integer ids, got ", ids->type().to_string());
    }
    ids = g.add("cast", {ids}, {{"dtype", DType::kI64}}, name() + "/ids");
  }
  return {g.add("embedding", {ctx.read(embeddings_), ids}, {}, name())};
}

std::string EmbeddingLayer::describe() const {
  return str_cat("input_dim=", input_dim_, ", output_dim=", output_dim_);
}

LayerRef Embedding(int64_t input_dim, int64_t output_dim, EmbeddingOptions options) {
  return LayerRef(std::make_shared<EmbeddingLayer>(input_dim, output_dim, std::move(options)));
}

}  // namespace tern::nn
