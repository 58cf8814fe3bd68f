// PositionEmbedding layer.
#include "tern/nn/position_embedding.h"

namespace tern::nn {

PositionEmbeddingLayer::PositionEmbeddingLayer(int64_t sequence_length, std::string initializer,
                                               std::string name)
    : Layer(name.empty() ? default_layer_name("position_embedding") : std::move(name)),
      sequence_length_(sequence_length),
      initializer_(std::move(initializer)) {
  TERN_CHECK_ARG(sequence_length_ > 0, "PositionEmbedding layer '", this->name(),
                 "': sequence_length must be positive, got ", sequence_length_);
  runtime::init::by_name(initializer_);
}

void PositionEmbeddingLayer::build(WeightBuilder& w, std::span<const TensorType> inputs) {
  const Shape& s = inputs[0].shape;
  TERN_CHECK_ARG(s.rank() == 3, "PositionEmbedding layer '", name(),
                 "' expects input [batch, seq, features], got ", s);
  Shape e{sequence_length_, s.dim(2)};
  embeddings_ = {
      w.add("embeddings", e, runtime::init::by_name(initializer_)), {DType::kF32, e}, true};
}

std::vector<ir::Value*> PositionEmbeddingLayer::call(LayerContext& ctx,
                                                     std::span<ir::Value* const> inputs) {
  ir::Value* x = single_input(*this, inputs);
  const Shape& s = x->shape();
  int64_t d = embeddings_.type.shape.dim(1);
  if (s.rank() != 3 || s.dim(1) > sequence_length_ || s.dim(2) != d) {
    throw_error(ErrorCode::kInvalidArgument, "PositionEmbedding layer '", name(),
                "' was built for ", sequence_length_, " positions of ", d,
                " features, got input of shape ", s);
  }
  ir::Graph& g = ctx.graph;
  ir::Value* e = ctx.read(embeddings_);
  if (s.dim(1) < sequence_length_) {
    e = g.add("slice", {e},
              {{"begin", std::vector<int64_t>{0, 0}}, {"size", std::vector<int64_t>{s.dim(1), d}}},
              name() + "/slice");
  }
  return {g.add("broadcast_to", {e}, {{"shape", s.dims()}}, name())};
}

LayerRef PositionEmbedding(int64_t sequence_length, const std::string& initializer,
                           const std::string& name) {
  return LayerRef(std::make_shared<PositionEmbeddingLayer>(sequence_length, initializer, name));
}

}  // namespace tern::nn
