// Conv2D and DepthwiseConv2D layers.
#include "tern/nn/conv2d.h"

#include <algorithm>
#include <cctype>

#include "tern/nn/activations.h"

namespace tern::nn {

std::string conv_padding(const std::string& padding, const std::string& layer_name) {
  std::string p = padding;
  std::transform(p.begin(), p.end(), p.begin(), [](unsigned char c) { return std::toupper(c); });
  if (p != "VALID" && p != "SAME") {
    throw_error(ErrorCode::kInvalidArgument, "layer '", layer_name,
                "': padding must be \"valid\" or \"same\", got \"", padding, "\"");
  }
  return p;
}

Conv2DLayer::Conv2DLayer(int64_t filters, std::vector<int64_t> kernel_size, Conv2DOptions options,
                         int64_t depth_multiplier)
    : Layer(options.name.empty()
                ? default_layer_name(depth_multiplier > 0 ? "depthwise_conv2d" : "conv2d")
                : options.name),
      filters_(filters),
      kernel_size_(std::move(kernel_size)),
      options_(std::move(options)),
      depth_multiplier_(depth_multiplier) {
  TERN_CHECK_ARG(depth_multiplier_ > 0 || filters_ > 0, "layer '", name(),
                 "': filters must be positive");
  TERN_CHECK_ARG(kernel_size_.size() == 2 && kernel_size_[0] > 0 && kernel_size_[1] > 0, "layer '",
                 name(), "': kernel_size must be two positive ints");
  TERN_CHECK_ARG(options_.strides.size() == 2 && options_.dilation_rate.size() == 2, "layer '",
                 name(), "': strides and dilation_rate must have two entries");
  conv_padding(options_.padding, name());
  check_activation_name(options_.activation);
}

void Conv2DLayer::build(WeightBuilder& w, std::span<const TensorType> inputs) {
  const Shape& s = inputs[0].shape;
  TERN_CHECK_ARG(s.rank() == 4, "layer '", name(), "' expects NHWC input of rank 4, got ", s);
  int64_t c_in = s.dim(3);
  Shape kshape;
  if (depth_multiplier_ > 0) {
    groups_ = c_in;
    filters_ = c_in * depth_multiplier_;
    kshape = Shape{kernel_size_[0], kernel_size_[1], 1, filters_};
  } else {
    groups_ = options_.groups;
    if (groups_ < 1 || c_in % groups_ != 0 || filters_ % groups_ != 0) {
      throw_error(ErrorCode::kInvalidArgument, "layer '", name(), "': groups ", groups_,
                  " must divide input channels ", c_in, " and filters ", filters_);
    }
    kshape = Shape{kernel_size_[0], kernel_size_[1], c_in / groups_, filters_};
  }
  kernel_ = {w.add("kernel", kshape, runtime::init::by_name(options_.kernel_initializer)),
             {DType::kF32, kshape},
             true};
  if (options_.use_bias) {
    bias_ = {w.add("bias", Shape{filters_}, runtime::init::by_name(options_.bias_initializer)),
             {DType::kF32, Shape{filters_}},
             true};
  }
}

std::vector<ir::Value*> Conv2DLayer::call(LayerContext& ctx, std::span<ir::Value* const> inputs) {
  ir::Value* x = single_input(*this, inputs);
  ir::Graph& g = ctx.graph;
  ops::Attrs attrs{{"strides", options_.strides},
                   {"padding", conv_padding(options_.padding, name())},
                   {"dilations", options_.dilation_rate},
                   {"groups", groups_}};
  ir::Value* y = g.add("conv2d", {x, ctx.read(kernel_)}, attrs, name() + "/conv2d");
  if (options_.use_bias) y = g.add("add", {y, ctx.read(bias_)}, {}, name() + "/bias_add");
  return {apply_activation(g, y, options_.activation, name())};
}

LayerRef Conv2D(int64_t filters, int64_t kernel_size, Conv2DOptions options) {
  return Conv2D(filters, std::vector<int64_t>{kernel_size, kernel_size}, std::move(options));
}

LayerRef Conv2D(int64_t filters, std::vector<int64_t> kernel_size, Conv2DOptions options) {
  return LayerRef(
      std::make_shared<Conv2DLayer>(filters, std::move(kernel_size), std::move(options)));
}

LayerRef DepthwiseConv2D(int64_t kernel_size, int64_t depth_multiplier, Conv2DOptions options) {
  TERN_CHECK_ARG(depth_multiplier > 0, "DepthwiseConv2D: depth_multiplier must be positive");
  return LayerRef(std::make_shared<Conv2DLayer>(0, std::vector<int64_t>{kernel_size, kernel_size},
                                                std::move(options), depth_multiplier));
}

}  // namespace tern::nn
