// ResNets (He et al. 2015) built with the functional API: ResNet-18/34 from basic blocks
// (two 3x3 convs), ResNet-50 from bottleneck blocks (1x1, 3x3, 1x1 x4 expansion; the stride sits
// on the 3x3 conv, "ResNet v1.5" as in torchvision).
//
//   Input [h, w, c] (or [h, w]: a channel axis is added)
//   stem "cifar":    Conv 3x3/1 (64w) -> BN -> relu
//   stem "imagenet": Conv 7x7/2 (64w) -> BN -> relu -> MaxPool 3x3/2 ("same" padding)
//   4 stages of 64w, 128w, 256w, 512w channels (x4 out for bottlenecks); stages 3-5 start with
//   stride 2. A block's shortcut is the identity, or Conv 1x1/stride + BN when the shape changes.
//   GlobalAveragePooling2D -> Dense(num_classes) logits.
// Every conv has use_bias = false and he_normal kernels; BatchNormalization uses momentum 0.9 and
// epsilon 1e-5 (torchvision's values). Layer names follow Keras' applications:
// "conv2_block1_1_conv", "conv2_block1_0_conv" (shortcut), "conv2_block1_add", "predictions".
//
// Parameter counts (trainable; BN moving statistics add the same count as BN gamma/beta):
//   resnet18, cifar stem, 10 classes: 11,173,962; imagenet stem, 1000 classes: 11,689,512
//   resnet34, imagenet, 1000: 21,797,672      resnet50, imagenet, 1000: 25,557,032
#pragma once

#include "tern/nn/model.h"

namespace tern::models {

struct ResNetOptions {
  std::string stem = "cifar";  // "cifar" | "imagenet"
  double width = 1.0;          // channel multiplier (each count rounded, at least 1)
  std::string name = "";       // default "resnet<depth>"
};

// blocks_per_stage: 4 entries; bottleneck selects the block type.
std::shared_ptr<nn::Model> resnet(const Shape& input_shape, int64_t num_classes,
                                  const std::vector<int64_t>& blocks_per_stage, bool bottleneck,
                                  const ResNetOptions& options = {});
std::shared_ptr<nn::Model> resnet18(const Shape& input_shape, int64_t num_classes,
                                    const ResNetOptions& options = {});
std::shared_ptr<nn::Model> resnet34(const Shape& input_shape, int64_t num_classes,
                                    const ResNetOptions& options = {});
std::shared_ptr<nn::Model> resnet50(const Shape& input_shape, int64_t num_classes,
                                    const ResNetOptions& options = {});

}  // namespace tern::models
