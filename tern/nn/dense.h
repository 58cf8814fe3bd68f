// Dense: y = activation(x @ kernel + bias).
//   input  [batch, ..., in]
//   kernel [in, units] (glorot_uniform), bias [units] (zeros)
//   output [batch, ..., units]
#pragma once

#include "tern/nn/model.h"

namespace tern::nn {

struct DenseOptions {
  std::string activation = "";
  bool use_bias = true;
  std::string kernel_initializer = "glorot_uniform";
  std::string bias_initializer = "zeros";
  std::string name = "";
};

class DenseLayer : public Layer {
 public:
  DenseLayer(int64_t units, DenseOptions options);
  std::string type_name() const override { return "Dense"; }
  void build(WeightBuilder& w, std::span<const TensorType> inputs) override;
  std::vector<ir::Value*> call(LayerContext& ctx, std::span<ir::Value* const> inputs) override;
  std::string describe() const override;

 private:
  int64_t units_;
  DenseOptions options_;
  WeightSpec kernel_, bias_;
};

LayerRef Dense(int64_t units, DenseOptions options = {});
LayerRef Dense(int64_t units, const std::string& activation);

}  // namespace tern::nn
