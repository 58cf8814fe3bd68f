// LayerNormalization layer.
#include "tern/nn/layer_norm.h"

namespace tern::nn {

LayerNormLayer::LayerNormLayer(LayerNormOptions options)
    : Layer(options.name.empty() ? default_layer_name("layer_normalization") : options.name),
      options_(std::move(options)) {
  TERN_CHECK_ARG(options_.epsilon > 0, "LayerNormalization layer '", name(),
                 "': epsilon must be positive, got ", options_.epsilon);
}

void LayerNormLayer::build(WeightBuilder& w, std::span<const TensorType> inputs) {
  const Shape& s = inputs[0].shape;
  TERN_CHECK_ARG(s.rank() >= 2, "LayerNormalization layer '", name(),
                 "' needs input of rank >= 2 (batch, ..., features), got ", s);
  Shape d{s.dim(s.rank() - 1)};
  using namespace runtime::init;
  gamma_ = {w.add("gamma", d, ones(), options_.scale), {DType::kF32, d}, options_.scale};
  beta_ = {w.add("beta", d, zeros(), options_.center), {DType::kF32, d}, options_.center};
}

std::vector<ir::Value*> LayerNormLayer::call(LayerContext& ctx,
                                             std::span<ir::Value* const> inputs) {
  ir::Value* x = single_input(*this, inputs);
  const Shape& s = x->shape();
  int64_t d = gamma_.type.shape.dim(0);
  if (s.rank() < 2 || s.dim(s.rank() - 1) != d) {
    throw_error(ErrorCode::kInvalidArgument, "LayerNormalization layer '", name(),
                "' was built for ", d, " features, got input of shape ", s);
  }
  ir::Node* ln = ctx.graph.add_node("layer_norm", {x, ctx.read(gamma_), ctx.read(beta_)},
                                    {{"epsilon", options_.epsilon}}, name());
  return {ln->output(0)};
}

std::string LayerNormLayer::describe() const {
  return str_cat("epsilon=", options_.epsilon);
}

LayerRef LayerNormalization(LayerNormOptions options) {
  return LayerRef(std::make_shared<LayerNormLayer>(std::move(options)));
}

}  // namespace tern::nn
