// GlobalAveragePooling1D layer.
#include "tern/nn/global_pooling1d.h"

namespace tern::nn {

GlobalAveragePooling1DLayer::GlobalAveragePooling1DLayer(std::string name)
    : Layer(name.empty() ? default_layer_name("global_average_pooling1d") : std::move(name)) {}

std::vector<ir::Value*> GlobalAveragePooling1DLayer::call(LayerContext& ctx,
                                                          std::span<ir::Value* const> inputs) {
  ir::Value* x = single_input(*this, inputs);
  if (x->shape().rank() != 3) {
    throw_error(ErrorCode::kInvalidArgument, "GlobalAveragePooling1D layer '", name(),
                "' expects input [batch, steps, features], got ", x->shape());
  }
  return {
      ctx.graph.add("mean", {x}, {{"axes", std::vector<int64_t>{1}}, {"keepdims", false}}, name())};
}

LayerRef GlobalAveragePooling1D(const std::string& name) {
  return LayerRef(std::make_shared<GlobalAveragePooling1DLayer>(name));
}

}  // namespace tern::nn
