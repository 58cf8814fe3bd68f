// "mixed_float16" through the training API on the CPU (f16 matmuls on reference kernels): an MLP
// trains about as well as in f32 with f16 nodes in its compiled step; dynamic loss scaling skips
// an overflowing step bitwise (weights, optimizer slots, iterations), halves the scale and
// recovers; the scale doubles after growth_interval clean steps; fixed scaling, gradient
// accumulation, checkpoints of the scale state, and the policy API's checks.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "tern/nn/conv2d.h"
#include "tern/nn/reshaping.h"
#include "tern/train/callbacks.h"
#include "tern/train/checkpoint.h"
#include "tern/train/mixed_precision.h"
#include "tern/train/observe_test_util.h"
#include "tests/support/random_tensor.h"

namespace tern::train {
namespace {

using testing_observe::fresh_dir;
using testing_observe::make_blobs;

std::unique_ptr<nn::Sequential> make_mlp(const std::string& policy,
                                         std::optional<optim::LossScaleOptions> scaling = {}) {
  auto m = std::make_unique<nn::Sequential>(
      std::vector<nn::LayerPtr>{
          nn::Dense(32, nn::DenseOptions{.activation = "relu", .name = "hidden"}),
          nn::Dense(4, nn::DenseOptions{.name = "logits"})},
      Shape{8});
  m->set_seed(5);
  m->build();
  m->compile(std::make_shared<optim::Adam>(1e-2),
             std::make_shared<nn::SparseCategoricalCrossentropy>(true),
             std::vector<std::string>{"accuracy"});
  if (scaling) {
    set_precision_policy(*m, policy, *scaling);
  } else {
    set_precision_policy(*m, policy);
  }
  return m;
}

optim::LossScaleOptions scale_options(double initial, int64_t growth_interval = 2000) {
  optim::LossScaleOptions o;
  o.initial_scale = initial;
  o.growth_interval = growth_interval;
  return o;
}

nn::FitOptions steps(int64_t n, int epochs = 1) {
  nn::FitOptions o;
  o.epochs = epochs;
  o.steps_per_epoch = n;
  o.batch_size = 64;
  o.verbose = 0;
  o.shuffle = false;
  return o;
}

int64_t iterations(const nn::Model& m) {
  return m.training_state()->optimizer->iterations;
}
double scale_of(const nn::Model& m) {
  return loss_scale_state(m).value().scale;
}
int64_t good_steps_of(const nn::Model& m) {
  return loss_scale_state(m).value().good_steps;
}

// Every variable but the loss-scale state, cloned.
std::map<std::string, Tensor> snapshot(const nn::Model& m) {
  std::map<std::string, Tensor> out;
  for (const std::string& name : m.variables().names()) {
    if (name.rfind("loss_scale/", 0) != 0) out[name] = m.variables().get(name).clone();
  }
  return out;
}

void expect_unchanged(const std::map<std::string, Tensor>& before, const nn::Model& m) {
  EXPECT_EQ(before.size(), snapshot(m).size());
  for (const auto& [name, t] : before) {
    EXPECT_TRUE(bitwise_equal(t, m.variables().get(name))) << name << " changed";
  }
}

const runtime::Executable& train_step(nn::Model& m) {
  for (const auto& [key, step] : m.training_state()->steps) {
    if (step.exe && step.exe->graph().name() == "train_step") return *step.exe;
  }
  throw_error(ErrorCode::kNotFound, "no train step");
}

class MixedFloat16 : public ::testing::Test {
 protected:
  void SetUp() override { make_blobs(512, 3, &x_, &y_); }
  Tensor x_, y_;
};

TEST_F(MixedFloat16, TrainsLikeFloat32WithF16Matmuls) {
  auto m32 = make_mlp("float32");
  auto m16 = make_mlp("mixed_float16");
  EXPECT_EQ(precision_policy(*m16), "mixed_float16");
  History h32 = m32->fit(x_, y_, steps(-1, 6));
  History h16 = m16->fit(x_, y_, steps(-1, 6));
  double first = h16.at("loss").front(), last = h16.at("loss").back();
  EXPECT_LT(last, 0.5 * first);
  EXPECT_NEAR(last, h32.at("loss").back(), 0.1 * h32.at("loss").front());
  EXPECT_GT(m16->evaluate(x_, y_, 128).metric("accuracy"), 0.95);
  for (const auto& w : m16->weights()) {
    EXPECT_EQ(m16->variables().get(w.name).dtype(), DType::kF32) << w.name;
  }
  // Forward matmuls and the backward ones (input and weight gradients) run in f16.
  int f16_matmuls = 0;
  for (const ir::Node* n : train_step(*m16).graph().nodes()) {
    if (n->op_name().find("matmul") != std::string::npos && n->output()->dtype() == DType::kF16)
      ++f16_matmuls;
  }
  EXPECT_GE(f16_matmuls, 4);
  // 48 steps: each skipped one halved the scale (no growth before 2000) and was no iteration.
  double skipped = std::log2(32768.0 / scale_of(*m16));
  EXPECT_EQ(skipped, std::floor(skipped));
  EXPECT_EQ(iterations(*m16), 48 - static_cast<int64_t>(skipped));
}

TEST_F(MixedFloat16, ConvolutionsRunInF16) {
  // The 8-D blobs as 2x4x1 images.
  Tensor images = x_.reshape(Shape({512, 2, 4, 1}));
  auto m = std::make_unique<nn::Sequential>(
      std::vector<nn::LayerPtr>{nn::Conv2D(8, 3, {.padding = "same", .activation = "relu"}),
                                nn::Conv2D(8, 3, {.padding = "same", .activation = "relu"}),
                                nn::Flatten(), nn::Dense(4)},
      Shape{2, 4, 1});
  m->set_seed(9);
  m->build();
  m->compile(std::make_shared<optim::Adam>(1e-2),
             std::make_shared<nn::SparseCategoricalCrossentropy>(true),
             std::vector<std::string>{"accuracy"});
  set_precision_policy(*m, "mixed_float16");
  History h = m->fit(images, y_, steps(-1, 4));
  EXPECT_LT(h.at("loss").back(), 0.5 * h.at("loss").front());
  std::map<std::string, int> f16;
  for (const ir::Node* n : train_step(*m).graph().nodes()) {
    if (n->num_outputs() == 1 && n->output()->dtype() == DType::kF16) ++f16[n->op_name()];
  }
  EXPECT_GE(f16["conv2d"] + f16["fused_conv2d"], 2);
  EXPECT_GE(f16["conv2d_backprop_input"], 1);  // the second convolution's input gradient
  EXPECT_GT(iterations(*m), 0);
}

TEST_F(MixedFloat16, OverflowSkipsTheStepBitwiseAndHalvesTheScale) {
  auto m = make_mlp("mixed_float16", scale_options(256));
  m->fit(x_, y_, steps(2));
  ASSERT_EQ(iterations(*m), 2);
  EXPECT_EQ(scale_of(*m), 256);
  EXPECT_EQ(good_steps_of(*m), 2);
  std::map<std::string, Tensor> before = snapshot(*m);
  EXPECT_GE(before.size(), 8u);  // 4 weights, Adam's m and v for each

  // 2^30 times the loss gradient overflows f16 in the first backward matmul.
  m->variables().assign(optim::kLossScaleVariable, Tensor::scalar(DType::kF32, std::ldexp(1, 30)));
  History h = m->fit(x_, y_, steps(1));
  expect_unchanged(before, *m);
  EXPECT_EQ(scale_of(*m), std::ldexp(1, 29));
  EXPECT_EQ(good_steps_of(*m), 0);
  EXPECT_EQ(iterations(*m), 2);
  double loss = h.at("loss").back();  // the unscaled loss of the skipped step
  EXPECT_TRUE(std::isfinite(loss));
  EXPECT_LT(loss, 3.0);

  // Training goes on: the scale halves until steps apply again, then stays.
  h = m->fit(x_, y_, steps(8, 6));
  double scale = scale_of(*m);
  EXPECT_LT(scale, std::ldexp(1, 29));
  int64_t skipped = static_cast<int64_t>(std::log2(std::ldexp(1, 29) / scale));
  EXPECT_GE(skipped, 1);
  EXPECT_EQ(iterations(*m), 2 + 48 - skipped);
  EXPECT_LT(h.at("loss").back(), 0.5 * h.at("loss").front());
}

TEST_F(MixedFloat16, ScaleDoublesAfterGrowthIntervalCleanSteps) {
  auto m = make_mlp("mixed_float16", scale_options(256, 3));
  m->fit(x_, y_, steps(2));
  EXPECT_EQ(scale_of(*m), 256);
  EXPECT_EQ(good_steps_of(*m), 2);
  m->fit(x_, y_, steps(1));
  EXPECT_EQ(scale_of(*m), 512);
  EXPECT_EQ(good_steps_of(*m), 0);
  m->fit(x_, y_, steps(1));
  EXPECT_EQ(scale_of(*m), 512);
  EXPECT_EQ(good_steps_of(*m), 1);
  EXPECT_EQ(iterations(*m), 4);
}

TEST_F(MixedFloat16, FixedScaleNeitherChangesNorChecks) {
  optim::LossScaleOptions o = scale_options(1024, 1);
  o.dynamic = false;
  auto m = make_mlp("mixed_float16", o);
  m->fit(x_, y_, steps(3));
  EXPECT_EQ(scale_of(*m), 1024);
  EXPECT_EQ(iterations(*m), 3);
  EXPECT_TRUE(train_step(*m).graph().nodes_of("all_finite").empty());
  EXPECT_TRUE(train_step(*m).graph().nodes_of("loss_scale_update").empty());
}

TEST_F(MixedFloat16, GradientAccumulationSkipsTheWholeUpdateOnOverflow) {
  auto m = make_mlp("mixed_float16", scale_options(256));
  nn::FitOptions o = steps(4);
  o.gradient_accumulation_steps = 2;
  m->fit(x_, y_, o);
  EXPECT_EQ(iterations(*m), 2);
  EXPECT_EQ(good_steps_of(*m), 2);

  std::map<std::string, Tensor> before = snapshot(*m);
  m->variables().assign(optim::kLossScaleVariable, Tensor::scalar(DType::kF32, std::ldexp(1, 30)));
  o.steps_per_epoch = 2;
  m->fit(x_, y_, o);
  EXPECT_EQ(iterations(*m), 2);
  EXPECT_EQ(scale_of(*m), std::ldexp(1, 29));  // halved once per skipped update
  for (const auto& [name, t] : before) {
    if (name.rfind("accumulator/", 0) == 0) {
      const Tensor& acc = m->variables().get(name);
      for (int64_t i = 0; i < acc.num_elements(); ++i) ASSERT_EQ(acc.get(i), 0) << name;
    } else {
      EXPECT_TRUE(bitwise_equal(t, m->variables().get(name))) << name << " changed";
    }
  }
}

TEST_F(MixedFloat16, CheckpointKeepsScaleAndGoodSteps) {
  std::string dir = fresh_dir("mixed_float16");
  std::string saved;
  {
    auto m = make_mlp("mixed_float16", scale_options(512, 2));
    m->fit(x_, y_, steps(3));
    ASSERT_EQ(scale_of(*m), 1024);
    ASSERT_EQ(good_steps_of(*m), 1);
    saved = save_checkpoint(dir, *m, capture_checkpoint_state(*m));
  }
  Checkpoint c = read_checkpoint(saved);
  EXPECT_TRUE(c.state.loss_scale.enabled);
  EXPECT_TRUE(c.state.loss_scale.dynamic);
  EXPECT_EQ(c.state.loss_scale.scale, 1024);
  EXPECT_EQ(c.state.loss_scale.good_steps, 1);
  nlohmann::json j = nlohmann::json::parse(c.manifest);
  EXPECT_EQ(j["loss_scale"]["scale"].get<double>(), 1024);
  EXPECT_EQ(j["loss_scale"]["good_steps"].get<int64_t>(), 1);

  auto resumed = make_mlp("mixed_float16", scale_options(512, 2));
  restore_checkpoint(*resumed, c);
  EXPECT_EQ(scale_of(*resumed), 1024);
  EXPECT_EQ(good_steps_of(*resumed), 1);
  resumed->fit(x_, y_, steps(1, 2));  // epoch 1 (0 was done): the second clean step in a row
  EXPECT_EQ(scale_of(*resumed), 2048);
  EXPECT_EQ(good_steps_of(*resumed), 0);

  // float32 records no loss scale.
  auto plain = make_mlp("float32");
  plain->fit(x_, y_, steps(1));
  CheckpointState st = capture_checkpoint_state(*plain);
  EXPECT_FALSE(st.loss_scale.enabled);
  Checkpoint p = read_checkpoint(save_checkpoint(dir + "/plain", *plain, st));
  EXPECT_FALSE(p.state.loss_scale.enabled);
}

TEST_F(MixedFloat16, PolicyAndOptionsAreChecked) {
  auto m = make_mlp("mixed_float16");
  EXPECT_EQ(loss_scale_options(*m), optim::LossScaleOptions{});
  EXPECT_EQ(loss_scale_options(*m)->initial_scale, 32768);
  EXPECT_EQ(loss_scale_options(*m)->growth_interval, 2000);
  EXPECT_EQ(loss_scale_options(*m)->factor, 2);
  EXPECT_FALSE(loss_scale_state(*m));  // created by the first train step
  EXPECT_TERN_ERROR(set_precision_policy(*m, "mixed_bfloat16", optim::LossScaleOptions{}),
                    ErrorCode::kInvalidArgument, "only to 'mixed_float16'");
  optim::LossScaleOptions bad;
  bad.factor = 1;
  EXPECT_TERN_ERROR(set_precision_policy(*m, "mixed_float16", bad), ErrorCode::kInvalidArgument,
                    "factor must be finite and > 1");
  bad = scale_options(0.5);
  EXPECT_TERN_ERROR(set_precision_policy(*m, "mixed_float16", bad), ErrorCode::kInvalidArgument,
                    "initial_scale must be finite and >= 1");
  bad = scale_options(8, 0);
  EXPECT_TERN_ERROR(set_precision_policy(*m, "mixed_float16", bad), ErrorCode::kInvalidArgument,
                    "growth_interval must be >= 1");
  set_precision_policy(*m, "mixed_bfloat16");
  EXPECT_FALSE(loss_scale_options(*m));
  EXPECT_EQ(precision_policy(*m), "mixed_bfloat16");
}

}  // namespace
}  // namespace tern::train
