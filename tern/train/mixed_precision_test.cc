// Mixed precision through the training API: a model trains under "mixed_bfloat16" with f32
// variables, its compiled step runs matmuls and convolutions in bf16, the optimized and
// unoptimized steps agree, batch norm between convolutions runs on bf16 activations with f32
// statistics, and unknown policies are refused (mixed_float16: mixed_float16_test.cc).
#include "tern/train/mixed_precision.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <set>
#include <utility>

#include "tern/base/philox.h"
#include "tern/nn/activation_layer.h"
#include "tern/nn/batch_norm.h"
#include "tern/nn/conv2d.h"
#include "tern/nn/dense.h"
#include "tern/nn/losses.h"
#include "tern/nn/pooling.h"
#include "tern/nn/reshaping.h"
#include "tern/optim/adam.h"
#include "tern/optim/sgd.h"
#include "tern/train/callbacks.h"
#include "tern/train/checkpoint.h"
#include "tern/train/observe_test_util.h"
#include "tern/train/training_state.h"

namespace tern {
namespace {

// Four Gaussian blobs in 16-D (also read as 4x4x1 images), labels 0..3.
void make_blobs(int64_t n, uint64_t seed, Tensor* x, Tensor* y) {
  *x = Tensor(DType::kF32, {n, 4, 4, 1});
  *y = Tensor(DType::kI64, {n});
  PhiloxStream rng(seed);
  for (int64_t i = 0; i < n; ++i) {
    int64_t c = static_cast<int64_t>(rng.next_below(4));
    y->set(i, static_cast<double>(c));
    for (int64_t j = 0; j < 16; ++j) {
      double center = (j % 4 == c) ? 2.0 : 0.0;
      x->set(i * 16 + j, center + 0.5 * (rng.next_double() - 0.5));
    }
  }
}

std::unique_ptr<nn::Sequential> make_model() {
  auto m = std::make_unique<nn::Sequential>(
      std::vector<nn::LayerPtr>{nn::Conv2D(8, 3, {.padding = "same", .activation = "relu"}),
                                nn::Flatten(), nn::Dense(32, "relu"), nn::Dense(4)});
  m->compile(std::make_shared<optim::Adam>(1e-2),
             std::make_shared<nn::SparseCategoricalCrossentropy>(true), {"accuracy"});
  return m;
}

const runtime::Executable& train_step(nn::Model& m) {
  for (const auto& [key, step] : m.training_state()->steps) {
    if (step.exe && step.exe->graph().name() == "train_step") return *step.exe;
  }
  throw_error(ErrorCode::kNotFound, "no train step");
}

TEST(MixedPrecision, Bf16TrainsWithF32Variables) {
  Tensor x, y;
  make_blobs(512, 3, &x, &y);
  auto model = make_model();
  train::set_precision_policy(*model, "mixed_bfloat16");
  EXPECT_EQ(train::precision_policy(*model), "mixed_bfloat16");
  nn::FitOptions o;
  o.epochs = 6;
  o.batch_size = 64;
  o.verbose = 0;
  train::History h = model->fit(x, y, o);
  EXPECT_LT(h.at("loss").back(), 0.5 * h.at("loss").front());
  EXPECT_GT(model->evaluate(x, y, 128).metric("accuracy"), 0.95);
  for (const auto& w : model->weights()) {
    EXPECT_EQ(model->variables().get(w.name).dtype(), DType::kF32) << w.name;
  }
  // The step computes in bf16: the convolution, both matmuls of the forward pass. Where the CPU
  // widens bf16 matmuls (no AMX), the graph holds f32 matmuls on operands cast up from bf16 or on
  // the weights' f32 copies rounded to bf16, and results rounded to bf16 (widen_contractions).
  auto from_bf16 = [](const ir::Value* v) {
    const ir::Node* p = v->node();
    return (p->op_name() == "cast" && p->input(0)->dtype() == DType::kBF16) ||
           p->op_name() == "variable_copy" ||
           (p->op_name() == "fused_elementwise" && p->name().ends_with("/rounded"));
  };
  int bf16_compute = 0;
  for (const ir::Node* n : train_step(*model).graph().nodes()) {
    const std::string& op = n->op_name();
    if (op.find("matmul") == std::string::npos && op.find("conv2d") == std::string::npos) continue;
    bool widened = from_bf16(n->input(0)) && from_bf16(n->input(1));
    if (n->output()->dtype() == DType::kBF16 || widened) ++bf16_compute;
  }
  EXPECT_GE(bf16_compute, 3);
}

TEST(MixedPrecision, Bf16BatchNormBetweenConvsTrains) {
  Tensor x, y;
  make_blobs(512, 5, &x, &y);
  nn::Sequential model(std::vector<nn::LayerPtr>{
      nn::Conv2D(8, 3, {.padding = "same"}), nn::BatchNormalization(), nn::Activation("relu"),
      nn::Conv2D(8, 3, {.padding = "same"}), nn::Flatten(), nn::Dense(4)});
  model.compile(std::make_shared<optim::Adam>(1e-2),
                std::make_shared<nn::SparseCategoricalCrossentropy>(true), {"accuracy"});
  train::set_precision_policy(model, "mixed_bfloat16");
  nn::FitOptions o;
  o.epochs = 6;
  o.batch_size = 64;
  o.verbose = 0;
  train::History h = model.fit(x, y, o);
  EXPECT_LT(h.at("loss").back(), 0.5 * h.at("loss").front());
  EXPECT_GT(model.evaluate(x, y, 128).metric("accuracy"), 0.95);
  for (const auto& w : model.weights()) {
    EXPECT_EQ(model.variables().get(w.name).dtype(), DType::kF32) << w.name;
  }
  // Forward and backward batch norm take bf16 activations and keep f32 statistics.
  int bn = 0;
  for (const ir::Node* n : train_step(model).graph().nodes()) {
    const std::string& op = n->op_name();
    if (op != "batch_norm_training" && op != "batch_norm_grad") continue;
    ++bn;
    EXPECT_EQ(n->output(0)->dtype(), DType::kBF16) << op;
    EXPECT_EQ(n->output(1)->dtype(), DType::kF32) << op;
    EXPECT_EQ(n->output(2)->dtype(), DType::kF32) << op;
  }
  EXPECT_EQ(bn, 2);
}

// One Adam step moves each weight by about lr * sign(gradient) whatever the gradient's size, so
// comparing weights within 2 * lr could not fail. Compare the direction of every clear update
// instead: the optimized and unoptimized mixed_bfloat16 steps must agree on the sign of (almost)
// every weight's update, which they only do if their gradients agree in sign.
TEST(MixedPrecision, OptimizedMatchesUnoptimizedStep) {
  Tensor x, y;
  make_blobs(64, 4, &x, &y);
  const double lr = 1e-2;
  std::vector<Tensor> initial;
  {
    auto model = make_model();
    model->set_seed(11);
    train::set_precision_policy(*model, "mixed_bfloat16");
    std::vector<int64_t> sample(x.shape().dims().begin() + 1, x.shape().dims().end());
    model->build(Shape(sample), DType::kF32);
    for (const auto& w : model->weights())
      initial.push_back(model->variables().get(w.name).clone());
  }
  double loss[2];
  std::vector<Tensor> weights[2];
  for (int optimize = 0; optimize < 2; ++optimize) {
    auto model = make_model();
    model->set_seed(11);
    train::set_precision_policy(*model, "mixed_bfloat16");
    model->training_state()->compile_options.optimize = optimize == 1;
    nn::FitOptions o;
    o.epochs = 1;
    o.batch_size = 64;
    o.verbose = 0;
    o.shuffle = false;
    loss[optimize] = model->fit(x, y, o).at("loss").back();
    for (const auto& w : model->weights())
      weights[optimize].push_back(model->variables().get(w.name).clone());
  }
  EXPECT_NEAR(loss[0], loss[1], 1e-2 * std::max(1.0, std::abs(loss[0])));
  ASSERT_EQ(weights[0].size(), initial.size());
  ASSERT_EQ(weights[1].size(), initial.size());
  int64_t moved = 0, agree = 0;
  for (size_t i = 0; i < initial.size(); ++i) {
    for (int64_t k = 0; k < initial[i].num_elements(); ++k) {
      double d0 = weights[0][i].get(k) - initial[i].get(k);
      double d1 = weights[1][i].get(k) - initial[i].get(k);
      if (std::abs(d0) < 0.5 * lr) continue;  // a tiny gradient: its sign may flip in bf16
      ++moved;
      agree += (d0 > 0) == (d1 > 0) ? 1 : 0;
    }
  }
  ASSERT_GT(moved, 100) << "the step moved almost nothing; the comparison would be empty";
  EXPECT_GE(static_cast<double>(agree), 0.95 * static_cast<double>(moved))
      << agree << " of " << moved << " clear updates agree in sign";
}

// The bf16 step reads the store's bf16 copies of its weights, which its SGD update writes: no
// copy is cast again while it trains, and weights set from outside between fits (as a restore
// does) are what the next fit trains from: the same epoch from the same weights gives the same
// weights, bit for bit (plain SGD keeps no state across steps).
TEST(MixedPrecision, Bf16StepsReadWeightCopiesTheUpdateWrites) {
  Tensor x, y;
  make_blobs(256, 6, &x, &y);
  nn::Sequential model(
      std::vector<nn::LayerPtr>{nn::Conv2D(8, 3, {.padding = "same", .activation = "relu"}),
                                nn::Flatten(), nn::Dense(16, "relu"), nn::Dense(4)});
  model.compile(std::make_shared<optim::SGD>(0.05),
                std::make_shared<nn::SparseCategoricalCrossentropy>(true),
                std::vector<std::string>{});
  model.set_seed(3);
  train::set_precision_policy(model, "mixed_bfloat16");
  model.build(Shape({4, 4, 1}), DType::kF32);
  std::map<std::string, Tensor> initial;
  for (const auto& w : model.weights())
    initial[w.name] = std::as_const(model.variables()).get(w.name).clone();
  nn::FitOptions o;
  o.epochs = 1;
  o.batch_size = 32;
  o.verbose = 0;
  o.shuffle = false;
  auto trained = [&] {
    std::map<std::string, Tensor> out;
    for (const auto& w : model.weights())
      out[w.name] = std::as_const(model.variables()).get(w.name).clone();
    return out;
  };
  model.fit(x, y, o);
  std::map<std::string, Tensor> first = trained();
  std::set<std::string> copies;
  for (const ir::Node* n : train_step(model).graph().nodes()) {
    if (n->op_name() == "variable_copy") copies.insert(n->attrs().get_string("name"));
    if (n->op_name() == "cast") {
      EXPECT_NE(n->input(0)->node()->op_name(), "variable") << "a weight is still cast";
    }
  }
  // The kernels, and the biases the bf16 layers add (the logits' bias is added in f32).
  const std::vector<nn::LayerPtr> layers = model.layers();
  const std::string& conv = layers[0]->name();
  const std::string& hidden = layers[2]->name();
  EXPECT_EQ(copies, (std::set<std::string>{conv + "/bias", conv + "/kernel", hidden + "/bias",
                                           hidden + "/kernel", layers[3]->name() + "/kernel"}));
  const int64_t casts = model.variables().copy_casts();
  // Saving a checkpoint only reads the weights: the copies stay current.
  const std::string dir = testing_observe::fresh_dir("mixed_copies");
  const std::string saved =
      train::save_checkpoint(dir, model, train::capture_checkpoint_state(model));
  model.fit(x, y, o);  // 8 more steps
  EXPECT_EQ(model.variables().copy_casts(), casts) << "a step or the save cast a copy again";
  std::map<std::string, Tensor> second = trained();
  EXPECT_FALSE(bitwise_equal(second.begin()->second, first.begin()->second));
  for (const auto& [name, t] : initial) model.variables().assign(name, t);
  model.fit(x, y, o);
  for (const auto& [name, t] : trained()) {
    EXPECT_TRUE(bitwise_equal(t, first.at(name))) << name << " differs from the first epoch's";
  }
  // Restoring the checkpoint taken after the first epoch (a fit resumes after its epoch), then
  // the next epoch: the second epoch's weights again, from copies cast again after the restore.
  train::restore_checkpoint(model, train::read_checkpoint(saved));
  const int64_t restored = model.variables().copy_casts();
  nn::FitOptions resume = o;
  resume.epochs = 2;
  model.fit(x, y, resume);
  EXPECT_GT(model.variables().copy_casts(), restored) << "the restore left the copies current";
  for (const auto& [name, t] : trained()) {
    EXPECT_TRUE(bitwise_equal(t, second.at(name))) << name << " differs from the second epoch's";
  }
}

TEST(MixedPrecision, PoliciesAreChecked) {
  auto model = make_model();
  EXPECT_EQ(train::precision_policy(*model), "float32");
  EXPECT_THROW(train::set_precision_policy(*model, "bf16"), Error);
  train::set_precision_policy(*model, "mixed_float16");
  EXPECT_EQ(train::precision_policy(*model), "mixed_float16");
  nn::Sequential uncompiled({nn::Dense(4)});
  EXPECT_THROW(train::set_precision_policy(uncompiled, "mixed_bfloat16"), Error);
  train::set_precision_policy(*model, "float32");
  EXPECT_EQ(train::precision_policy(*model), "float32");
}

}  // namespace
}  // namespace tern
