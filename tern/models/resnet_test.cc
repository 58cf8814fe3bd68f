// ResNets: parameter counts (summary of resnet18/cifar against the known 11,173,962), block
// structure (projection shortcuts only where the shape changes), output shapes for both stems,
// zoo arguments, and a short fit of a narrow ResNet-18 on a learnable synthetic task.
#include <gtest/gtest.h>

#include "tern/base/philox.h"
#include "tern/models/resnet.h"
#include "tern/models/zoo.h"
#include "tern/nn/losses.h"
#include "tern/optim/adam.h"
#include "tern/train/callbacks.h"
#include "tests/support/random_tensor.h"

namespace tern::models {
namespace {

int64_t trainable_count(const nn::Model& m) {
  int64_t n = 0;
  for (const auto& w : m.trainable_weights()) n += w.type.shape.num_elements();
  return n;
}

bool has_layer(const nn::Model& m, const std::string& name) {
  for (const auto& l : m.layers()) {
    if (l->name() == name) return true;
  }
  return false;
}

// ResNet-18, CIFAR stem, 10 classes. Convs (no bias): stem 3*3*3*64 = 1,728; stage 2: 4 x 36,864;
// stage 3: 73,728 + 3 x 147,456 + 8,192 (1x1 shortcut); stage 4: 294,912 + 3 x 589,824 + 32,768;
// stage 5: 1,179,648 + 3 x 2,359,296 + 131,072; total 11,159,232. BN gamma+beta over 4,800
// channels: 9,600 (and 9,600 moving statistics). Dense 512 * 10 + 10 = 5,130.
// 11,159,232 + 9,600 + 5,130 = 11,173,962.
TEST(ResNet, Resnet18CifarSummaryCounts) {
  auto m = resnet18({32, 32, 3}, 10);
  m->build();
  std::string s = m->summary();
  EXPECT_NE(s.find("Trainable params: 11173962\n"), std::string::npos) << s;
  EXPECT_NE(s.find("Non-trainable params: 9600\n"), std::string::npos) << s;
  EXPECT_NE(s.find("Total params: 11183562\n"), std::string::npos) << s;
  EXPECT_NE(s.find("predictions (Dense)"), std::string::npos);
  // Shortcut projections exactly where the shape changes (stride 2 at stages 3-5).
  EXPECT_FALSE(has_layer(*m, "conv2_block1_0_conv"));
  EXPECT_TRUE(has_layer(*m, "conv3_block1_0_conv"));
  EXPECT_FALSE(has_layer(*m, "conv3_block2_0_conv"));
  EXPECT_TRUE(has_layer(*m, "conv5_block1_0_conv"));
  EXPECT_FALSE(has_layer(*m, "pool1_pool"));
}

// The ImageNet configurations match torchvision's published parameter counts (conv biases off,
// BN affine included, 1000-way classifier). The count does not depend on the image size, so a
// small image keeps building cheap.
TEST(ResNet, ImagenetParamCountsMatchTorchvision) {
  auto r18 = resnet18({32, 32, 3}, 1000, {.stem = "imagenet"});
  r18->build();
  EXPECT_EQ(trainable_count(*r18), 11689512);
  EXPECT_TRUE(has_layer(*r18, "pool1_pool"));
  auto r34 = resnet34({32, 32, 3}, 1000, {.stem = "imagenet"});
  r34->build();
  EXPECT_EQ(trainable_count(*r34), 21797672);
  auto r50 = resnet50({32, 32, 3}, 1000, {.stem = "imagenet"});
  r50->build();
  EXPECT_EQ(trainable_count(*r50), 25557032);
  EXPECT_TRUE(has_layer(*r50, "conv2_block1_0_conv"));  // 64 -> 256 channels: projection
  EXPECT_FALSE(has_layer(*r50, "conv2_block2_0_conv"));
}

TEST(ResNet, OutputShapesForBothStemsAndWidth) {
  auto cifar = build_model("resnet18", {16, 16, 3}, 7, {{"width", 0.125}});
  Tensor x = ::tern::testing::random_tensor(DType::kF32, {2, 16, 16, 3}, 1);
  EXPECT_EQ(cifar->predict(x).shape(), (Shape{2, 7}));
  EXPECT_EQ(cifar->variables().get("conv1_conv/kernel").shape(), (Shape{3, 3, 3, 8}));
  EXPECT_EQ(cifar->variables().get("conv5_block2_2_conv/kernel").shape(), (Shape{3, 3, 64, 64}));
  auto imagenet =
      build_model("resnet50", {32, 32}, 5, {{"stem", std::string("imagenet")}, {"width", 0.0625}});
  Tensor gray = ::tern::testing::random_tensor(DType::kF32, {3, 32, 32}, 2);
  EXPECT_EQ(imagenet->predict(gray).shape(), (Shape{3, 5}));
  EXPECT_EQ(imagenet->variables().get("conv1_conv/kernel").shape(), (Shape{7, 7, 1, 4}));
  EXPECT_EQ(imagenet->variables().get("conv5_block3_3_conv/kernel").shape(),
            (Shape{1, 1, 32, 128}));
}

TEST(ResNet, ZooArgumentErrors) {
  EXPECT_TERN_ERROR(build_model("resnet18", {32, 32, 3}, 10, {{"stem", std::string("imagenett")}}),
                    ErrorCode::kInvalidArgument, "stem must be \"cifar\" or \"imagenet\"");
  EXPECT_TERN_ERROR(build_model("resnet34", {32, 32, 3}, 10, {{"widht", 0.5}}),
                    ErrorCode::kInvalidArgument, "did you mean 'width'");
  EXPECT_TERN_ERROR(build_model("resnet50", {32, 32, 3}, 10, {{"stem", int64_t{3}}}),
                    ErrorCode::kInvalidArgument, "must be string");
  EXPECT_TERN_ERROR(build_model("resnet18", {32}, 10), ErrorCode::kInvalidArgument,
                    "[h, w, c] or [h, w]");
  EXPECT_TERN_ERROR(zoo_entry("resnet51"), ErrorCode::kNotFound, "did you mean 'resnet50'");
}

// 8x8x3 noise with one bright 4x4 quadrant; the label is the quadrant.
void make_quadrants(int64_t n, uint64_t seed, Tensor* x, Tensor* y) {
  *x = Tensor(DType::kF32, {n, 8, 8, 3});
  *y = Tensor(DType::kI64, {n});
  PhiloxStream rng(seed);
  for (int64_t i = 0; i < n; ++i) {
    int64_t q = static_cast<int64_t>(rng.next_below(4));
    y->set(i, static_cast<double>(q));
    for (int64_t r = 0; r < 8; ++r) {
      for (int64_t c = 0; c < 8; ++c) {
        bool lit = (r / 4) == q / 2 && (c / 4) == q % 2;
        for (int64_t ch = 0; ch < 3; ++ch) {
          x->set(((i * 8 + r) * 8 + c) * 3 + ch, 0.5 * rng.next_double() + (lit ? 1.0 : 0.0));
        }
      }
    }
  }
}

TEST(ResNet, NarrowResnet18LearnsQuadrants) {
  Tensor x, y, xv, yv;
  make_quadrants(256, 1, &x, &y);
  make_quadrants(128, 2, &xv, &yv);
  auto m = resnet18({8, 8, 3}, 4, {.width = 0.125});
  m->compile(std::make_shared<optim::Adam>(1e-2),
             std::make_shared<nn::SparseCategoricalCrossentropy>(true), {"accuracy"});
  nn::FitOptions o;
  o.epochs = 3;
  o.batch_size = 32;
  o.verbose = 0;
  train::History h = m->fit(x, y, o);
  EXPECT_LT(h.at("loss").back(), h.at("loss").front());
  // Held-out accuracy in inference mode (BN moving statistics).
  double accuracy = m->evaluate(xv, yv, 64).metric("accuracy");
  RecordProperty("heldout_accuracy", std::to_string(accuracy));
  EXPECT_GE(accuracy, 0.9);
}

}  // namespace
}  // namespace tern::models
