// ResNet-18/34/50 and their zoo entries.
#include "tern/models/resnet.h"

#include <cmath>

#include "tern/models/zoo.h"
#include "tern/nn/activation_layer.h"
#include "tern/nn/add_layer.h"
#include "tern/nn/batch_norm.h"
#include "tern/nn/conv2d.h"
#include "tern/nn/dense.h"
#include "tern/nn/pooling.h"
#include "tern/nn/reshaping.h"

namespace tern::models {
namespace {

using nn::SymbolicTensor;

// Conv (no bias) -> BatchNormalization [-> relu], named "<prefix>_conv", "<prefix>_bn", ...
SymbolicTensor conv_bn(SymbolicTensor x, int64_t filters, int64_t kernel, int64_t stride, bool relu,
                       const std::string& prefix) {
  x = nn::Conv2D(filters, kernel,
                 {.strides = {stride, stride},
                  .padding = "same",
                  .use_bias = false,
                  .kernel_initializer = "he_normal",
                  .name = prefix + "_conv"})(x);
  x = nn::BatchNormalization({.momentum = 0.9, .epsilon = 1e-5, .name = prefix + "_bn"})(x);
  return relu ? nn::Activation("relu", prefix + "_relu")(x) : x;
}

// One residual block; `in_channels` decides whether the shortcut needs a projection.
SymbolicTensor residual_block(SymbolicTensor x, int64_t in_channels, int64_t width, int64_t stride,
                              bool bottleneck, const std::string& name) {
  int64_t out_channels = bottleneck ? 4 * width : width;
  SymbolicTensor shortcut = x;
  if (stride != 1 || in_channels != out_channels) {
    shortcut = conv_bn(x, out_channels, 1, stride, false, name + "_0");
  }
  SymbolicTensor h;
  if (bottleneck) {
    h = conv_bn(x, width, 1, 1, true, name + "_1");
    h = conv_bn(h, width, 3, stride, true, name + "_2");
    h = conv_bn(h, out_channels, 1, 1, false, name + "_3");
  } else {
    h = conv_bn(x, width, 3, stride, true, name + "_1");
    h = conv_bn(h, width, 3, 1, false, name + "_2");
  }
  SymbolicTensor sum = nn::Add(name + "_add")({shortcut, h});
  return nn::Activation("relu", name + "_out")(sum);
}

}  // namespace

std::shared_ptr<nn::Model> resnet(const Shape& input_shape, int64_t num_classes,
                                  const std::vector<int64_t>& blocks_per_stage, bool bottleneck,
                                  const ResNetOptions& options) {
  TERN_CHECK_ARG(input_shape.rank() == 3 || input_shape.rank() == 2,
                 "resnet: input shape must be [h, w, c] or [h, w], got ", input_shape);
  TERN_CHECK_ARG(blocks_per_stage.size() == 4, "resnet: needs 4 stages, got ",
                 blocks_per_stage.size());
  TERN_CHECK_ARG(options.stem == "cifar" || options.stem == "imagenet",
                 "resnet: stem must be \"cifar\" or \"imagenet\", got \"", options.stem, "\"");
  TERN_CHECK_ARG(options.width > 0, "resnet: width must be positive, got ", options.width);
  TERN_CHECK_ARG(num_classes > 0, "resnet: num_classes must be positive, got ", num_classes);
  auto channels = [&](int64_t base) {
    return std::max<int64_t>(1, std::llround(static_cast<double>(base) * options.width));
  };
  SymbolicTensor input = nn::Input(input_shape, DType::kF32, "input");
  SymbolicTensor x = input;
  if (input_shape.rank() == 2) {
    x = nn::Reshape({input_shape.dim(0), input_shape.dim(1), 1}, "add_channel")(x);
  }
  if (options.stem == "cifar") {
    x = conv_bn(x, channels(64), 3, 1, true, "conv1");
  } else {
    x = conv_bn(x, channels(64), 7, 2, true, "conv1");
    x = nn::MaxPooling2D(3, {.strides = {2, 2}, .padding = "same", .name = "pool1_pool"})(x);
  }
  int64_t in_channels = channels(64);
  for (size_t stage = 0; stage < 4; ++stage) {
    int64_t width = channels(int64_t{64} << stage);
    for (int64_t b = 0; b < blocks_per_stage[stage]; ++b) {
      int64_t stride = stage > 0 && b == 0 ? 2 : 1;
      std::string name = str_cat("conv", stage + 2, "_block", b + 1);
      x = residual_block(x, in_channels, width, stride, bottleneck, name);
      in_channels = bottleneck ? 4 * width : width;
    }
  }
  x = nn::GlobalAveragePooling2D("avg_pool")(x);
  x = nn::Dense(num_classes, nn::DenseOptions{.name = "predictions"})(x);
  int depth = 2;
  for (int64_t n : blocks_per_stage) depth += static_cast<int>(n) * (bottleneck ? 3 : 2);
  std::string name = options.name.empty() ? str_cat("resnet", depth) : options.name;
  return std::make_shared<nn::Model>(std::vector<SymbolicTensor>{input},
                                     std::vector<SymbolicTensor>{x}, name);
}

std::shared_ptr<nn::Model> resnet18(const Shape& input_shape, int64_t num_classes,
                                    const ResNetOptions& options) {
  return resnet(input_shape, num_classes, {2, 2, 2, 2}, false, options);
}

std::shared_ptr<nn::Model> resnet34(const Shape& input_shape, int64_t num_classes,
                                    const ResNetOptions& options) {
  return resnet(input_shape, num_classes, {3, 4, 6, 3}, false, options);
}

std::shared_ptr<nn::Model> resnet50(const Shape& input_shape, int64_t num_classes,
                                    const ResNetOptions& options) {
  return resnet(input_shape, num_classes, {3, 4, 6, 3}, true, options);
}

void add_resnet_models(std::vector<ZooEntry>& z) {
  using ops::AttrKind;
  const std::vector<ops::AttrSpec> args = {{"stem", AttrKind::kString, std::string("cifar")},
                                           {"width", AttrKind::kFloat, 1.0}};
  struct Variant {
    const char* name;
    const char* doc;
    std::shared_ptr<nn::Model> (*build)(const Shape&, int64_t, const ResNetOptions&);
  };
  const Variant variants[] = {
      {"resnet18",
       "ResNet-18: basic blocks [2, 2, 2, 2]; stem \"cifar\" (3x3/1) or \"imagenet\" "
       "(7x7/2 + max pool); width multiplies every channel count.",
       resnet18},
      {"resnet34", "ResNet-34: basic blocks [3, 4, 6, 3]; stem and width as resnet18.", resnet34},
      {"resnet50",
       "ResNet-50: bottleneck blocks [3, 4, 6, 3] (stride on the 3x3 conv); stem and "
       "width as resnet18.",
       resnet50},
  };
  for (const Variant& v : variants) {
    auto build = v.build;
    z.push_back(
        {v.name, v.doc, args, [build](const Shape& in, int64_t classes, const ops::Attrs& a) {
           return build(in, classes, {.stem = a.get_string("stem"), .width = a.get_float("width")});
         }});
  }
}

}  // namespace tern::models
