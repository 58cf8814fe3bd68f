// Activation layer: applies a named activation (see activations.h); shape unchanged.
#pragma once

#include "tern/nn/model.h"

namespace tern::nn {

class ActivationLayer : public Layer {
 public:
  ActivationLayer(std::string activation, std::string name);
  std::string type_name() const override { return "Activation"; }
  std::vector<ir::Value*> call(LayerContext& ctx, std::span<ir::Value* const> inputs) override;

 private:
  std::string activation_;
};

LayerRef Activation(const std::string& activation, const std::string& name = "");

}  // namespace tern::nn
