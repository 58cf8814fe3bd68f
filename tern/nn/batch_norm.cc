// BatchNormalization layer.
#include "tern/nn/batch_norm.h"

namespace tern::nn {

BatchNormLayer::BatchNormLayer(BatchNormOptions options)
    : Layer(options.name.empty() ? default_layer_name("batch_normalization") : options.name),
      options_(std::move(options)) {
  TERN_CHECK_ARG(options_.momentum >= 0 && options_.momentum <= 1, "layer '", name(),
                 "': momentum must be in [0, 1], got ", options_.momentum);
  TERN_CHECK_ARG(options_.epsilon > 0, "layer '", name(), "': epsilon must be positive");
}

void BatchNormLayer::build(WeightBuilder& w, std::span<const TensorType> inputs) {
  const Shape& s = inputs[0].shape;
  TERN_CHECK_ARG(s.rank() >= 2, "layer '", name(), "' needs input of rank >= 2, got ", s);
  Shape c{s.dim(s.rank() - 1)};
  using namespace runtime::init;
  // gamma/beta are created even when scale/center are off (fixed at 1/0, not trained), so the op
  // signature stays the same.
  gamma_ = {w.add("gamma", c, ones(), options_.scale), {DType::kF32, c}, options_.scale};
  beta_ = {w.add("beta", c, zeros(), options_.center), {DType::kF32, c}, options_.center};
  mean_ = {w.add("moving_mean", c, zeros(), false), {DType::kF32, c}, false};
  var_ = {w.add("moving_variance", c, ones(), false), {DType::kF32, c}, false};
}

std::vector<ir::Value*> BatchNormLayer::call(LayerContext& ctx,
                                             std::span<ir::Value* const> inputs) {
  ir::Value* x = single_input(*this, inputs);
  ir::Graph& g = ctx.graph;
  ops::Attrs attrs{{"epsilon", options_.epsilon}};
  if (!ctx.training || !trainable) {
    return {g.add("batch_norm_inference",
                  {x, ctx.read(gamma_), ctx.read(beta_), ctx.read(mean_), ctx.read(var_)}, attrs,
                  name())};
  }
  ir::Node* bn =
      g.add_node("batch_norm_training", {x, ctx.read(gamma_), ctx.read(beta_)}, attrs, name());
  if (ctx.updates) {
    auto moving = [&](const WeightSpec& w, ir::Value* batch_stat, const char* tag) {
      ir::Value* m = ctx.read(w);
      ir::Value* a = g.add("mul", {m, g.scalar(DType::kF32, options_.momentum)}, {},
                           name() + "/" + tag + "_decay");
      ir::Value* b = g.add("mul", {batch_stat, g.scalar(DType::kF32, 1 - options_.momentum)}, {},
                           name() + "/" + tag + "_new");
      ctx.updates->push_back({w.name, g.add("add", {a, b}, {}, name() + "/" + tag + "_update")});
    };
    moving(mean_, bn->output(1), "mean");
    moving(var_, bn->output(2), "variance");
  }
  return {bn->output(0)};
}

LayerRef BatchNormalization(BatchNormOptions options) {
  return LayerRef(std::make_shared<BatchNormLayer>(std::move(options)));
}

}  // namespace tern::nn
