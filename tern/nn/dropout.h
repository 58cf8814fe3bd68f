// Dropout: in training, zeroes each element with probability `rate` and scales the rest by
// 1 / (1 - rate); identity in inference. The mask comes from Philox keyed by the layer's seed and
// the step's rng offset, so it is reproducible per seed and new every step.
//   input [batch, ...] -> output of the same shape
#pragma once

#include "tern/nn/model.h"

namespace tern::nn {

class DropoutLayer : public Layer {
 public:
  DropoutLayer(double rate, int64_t seed, std::string name);
  std::string type_name() const override { return "Dropout"; }
  std::vector<ir::Value*> call(LayerContext& ctx, std::span<ir::Value* const> inputs) override;

 private:
  double rate_;
  int64_t seed_;
};

// seed < 0: derived from the layer name (stable across runs).
LayerRef Dropout(double rate, int64_t seed = -1, const std::string& name = "");

}  // namespace tern::nn
