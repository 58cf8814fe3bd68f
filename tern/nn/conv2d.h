// Conv2D and DepthwiseConv2D: y = activation(conv2d(x, kernel) + bias), NHWC.
//   input  [batch, h, w, c_in]
//   kernel [kh, kw, c_in / groups, filters] (glorot_uniform); depthwise: [kh, kw, 1, c_in *
//   multiplier] bias   [filters] (zeros) output [batch, h', w', filters]   with "valid" or "same"
//   padding (TensorFlow's rules)
#pragma once

#include "tern/nn/model.h"

namespace tern::nn {

struct Conv2DOptions {
  std::vector<int64_t> strides = {1, 1};
  std::string padding = "valid";  // "valid" | "same"
  std::vector<int64_t> dilation_rate = {1, 1};
  int64_t groups = 1;
  std::string activation = "";
  bool use_bias = true;
  std::string kernel_initializer = "glorot_uniform";
  std::string bias_initializer = "zeros";
  std::string name = "";
};

class Conv2DLayer : public Layer {
 public:
  // depth_multiplier > 0 makes a depthwise convolution (filters ignored).
  Conv2DLayer(int64_t filters, std::vector<int64_t> kernel_size, Conv2DOptions options,
              int64_t depth_multiplier = 0);
  std::string type_name() const override {
    return depth_multiplier_ > 0 ? "DepthwiseConv2D" : "Conv2D";
  }
  void build(WeightBuilder& w, std::span<const TensorType> inputs) override;
  std::vector<ir::Value*> call(LayerContext& ctx, std::span<ir::Value* const> inputs) override;

 private:
  int64_t filters_;
  std::vector<int64_t> kernel_size_;
  Conv2DOptions options_;
  int64_t depth_multiplier_;
  int64_t groups_ = 1;
  WeightSpec kernel_, bias_;
};

LayerRef Conv2D(int64_t filters, int64_t kernel_size, Conv2DOptions options = {});
LayerRef Conv2D(int64_t filters, std::vector<int64_t> kernel_size, Conv2DOptions options = {});
LayerRef DepthwiseConv2D(int64_t kernel_size, int64_t depth_multiplier = 1,
                         Conv2DOptions options = {});

// Maps Keras padding names ("valid", "same", any case) to the op's "VALID"/"SAME";
// InvalidArgument naming the layer otherwise.
std::string conv_padding(const std::string& padding, const std::string& layer_name);

}  // namespace tern::nn
