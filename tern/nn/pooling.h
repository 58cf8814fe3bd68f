// Pooling layers, NHWC.
//   MaxPooling2D / AveragePooling2D: [batch, h, w, c] -> [batch, h', w', c]
//     (pool_size, strides default = pool_size, padding "valid" | "same")
//   GlobalAveragePooling2D: [batch, h, w, c] -> [batch, c]
#pragma once

#include "tern/nn/model.h"

namespace tern::nn {

struct Pool2DOptions {
  std::vector<int64_t> strides = {};  // empty: same as pool_size (Keras)
  std::string padding = "valid";
  std::string name = "";
};

class Pool2DLayer : public Layer {
 public:
  Pool2DLayer(bool max, std::vector<int64_t> pool_size, Pool2DOptions options);
  std::string type_name() const override { return max_ ? "MaxPooling2D" : "AveragePooling2D"; }
  std::vector<ir::Value*> call(LayerContext& ctx, std::span<ir::Value* const> inputs) override;

 private:
  bool max_;
  std::vector<int64_t> pool_size_;
  Pool2DOptions options_;
};

class GlobalAveragePooling2DLayer : public Layer {
 public:
  explicit GlobalAveragePooling2DLayer(std::string name);
  std::string type_name() const override { return "GlobalAveragePooling2D"; }
  std::vector<ir::Value*> call(LayerContext& ctx, std::span<ir::Value* const> inputs) override;
};

LayerRef MaxPooling2D(int64_t pool_size = 2, Pool2DOptions options = {});
LayerRef AveragePooling2D(int64_t pool_size = 2, Pool2DOptions options = {});
LayerRef GlobalAveragePooling2D(const std::string& name = "");

}  // namespace tern::nn
