// Add: the elementwise sum of two or more inputs of the same shape (residual connections).
//   inputs [batch, ...] x n (n >= 2, identical shapes and dtypes) -> output [batch, ...]
// Shapes must match exactly (no broadcasting): a mismatch is InvalidArgument naming the layer and
// both shapes.
#pragma once

#include "tern/nn/model.h"

namespace tern::nn {

class AddLayer : public Layer {
 public:
  explicit AddLayer(std::string name);
  std::string type_name() const override { return "Add"; }
  std::vector<ir::Value*> call(LayerContext& ctx, std::span<ir::Value* const> inputs) override;
};

LayerRef Add(const std::string& name = "");

}  // namespace tern::nn
