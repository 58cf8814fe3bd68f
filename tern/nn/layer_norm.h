// LayerNormalization over the last axis, Keras semantics:
//   y = (x - mean(x)) / sqrt(var(x) + epsilon) * gamma + beta, statistics per sample and position.
//   input/output [batch, ..., d]
//   gamma [d] (ones), beta [d] (zeros)
// center = false / scale = false keep beta at 0 / gamma at 1 (created, never trained), so the
// layer_norm op signature stays the same. Only the last axis is supported (the op's contract).
#pragma once

#include "tern/nn/model.h"

namespace tern::nn {

struct LayerNormOptions {
  double epsilon = 1e-3;
  bool center = true;
  bool scale = true;
  std::string name = "";
};

class LayerNormLayer : public Layer {
 public:
  explicit LayerNormLayer(LayerNormOptions options);
  std::string type_name() const override { return "LayerNormalization"; }
  void build(WeightBuilder& w, std::span<const TensorType> inputs) override;
  std::vector<ir::Value*> call(LayerContext& ctx, std::span<ir::Value* const> inputs) override;
  std::string describe() const override;

 private:
  LayerNormOptions options_;
  WeightSpec gamma_, beta_;
};

LayerRef LayerNormalization(LayerNormOptions options = {});

}  // namespace tern::nn
