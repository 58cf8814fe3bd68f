// GlobalAveragePooling1D: the mean over the steps axis (mean-pooling a sequence).
//   input [batch, steps, features] -> output [batch, features]
#pragma once

#include "tern/nn/model.h"

namespace tern::nn {

class GlobalAveragePooling1DLayer : public Layer {
 public:
  explicit GlobalAveragePooling1DLayer(std::string name);
  std::string type_name() const override { return "GlobalAveragePooling1D"; }
  std::vector<ir::Value*> call(LayerContext& ctx, std::span<ir::Value* const> inputs) override;
};

LayerRef GlobalAveragePooling1D(const std::string& name = "");

}  // namespace tern::nn
