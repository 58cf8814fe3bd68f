// BatchNormalization over the last (channel) axis, Keras semantics.
//   input/output [batch, ..., c]
//   gamma [c] (ones), beta [c] (zeros), moving_mean [c] (zeros), moving_variance [c] (ones)
// Training normalizes with batch statistics and updates the moving averages:
//   moving = moving * momentum + batch_stat * (1 - momentum);
// inference (and a frozen layer, as in Keras) uses the moving averages.
#pragma once

#include "tern/nn/model.h"

namespace tern::nn {

struct BatchNormOptions {
  double momentum = 0.99;
  double epsilon = 1e-3;
  bool center = true;
  bool scale = true;
  std::string name = "";
};

class BatchNormLayer : public Layer {
 public:
  explicit BatchNormLayer(BatchNormOptions options);
  std::string type_name() const override { return "BatchNormalization"; }
  void build(WeightBuilder& w, std::span<const TensorType> inputs) override;
  std::vector<ir::Value*> call(LayerContext& ctx, std::span<ir::Value* const> inputs) override;

 private:
  BatchNormOptions options_;
  WeightSpec gamma_, beta_, mean_, var_;
};

LayerRef BatchNormalization(BatchNormOptions options = {});

}  // namespace tern::nn
