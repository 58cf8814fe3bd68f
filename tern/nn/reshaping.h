// Shape layers.
//   Flatten: [batch, d1, d2, ...] -> [batch, d1 * d2 * ...]
//   Reshape(target): [batch, ...] -> [batch, target...] (one -1 allowed in target)
#pragma once

#include "tern/nn/model.h"

namespace tern::nn {

class ReshapeLayer : public Layer {
 public:
  // flatten = true ignores `target`.
  ReshapeLayer(bool flatten, std::vector<int64_t> target, std::string name);
  std::string type_name() const override { return flatten_ ? "Flatten" : "Reshape"; }
  std::vector<ir::Value*> call(LayerContext& ctx, std::span<ir::Value* const> inputs) override;

 private:
  bool flatten_;
  std::vector<int64_t> target_;
};

LayerRef Flatten(const std::string& name = "");
LayerRef Reshape(std::vector<int64_t> target_shape, const std::string& name = "");

}  // namespace tern::nn
