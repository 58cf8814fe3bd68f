// Activation layer.
#include "tern/nn/activation_layer.h"

#include "tern/nn/activations.h"

namespace tern::nn {

ActivationLayer::ActivationLayer(std::string activation, std::string name)
    : Layer(name.empty() ? default_layer_name("activation") : std::move(name)),
      activation_(std::move(activation)) {
  check_activation_name(activation_);
}

std::vector<ir::Value*> ActivationLayer::call(LayerContext& ctx,
                                              std::span<ir::Value* const> inputs) {
  return {apply_activation(ctx.graph, single_input(*this, inputs), activation_, name())};
}

LayerRef Activation(const std::string& activation, const std::string& name) {
  return LayerRef(std::make_shared<ActivationLayer>(activation, name));
}

}  // namespace tern::nn
