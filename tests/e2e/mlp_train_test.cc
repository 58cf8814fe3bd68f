// End-to-end training of a 2-layer MLP built by hand as one train-step graph (forward, loss,
// autodiff, one fused optimizer update), run compiled (Executable) and eagerly (run_graph_eager)
// on a synthetic, separable problem: 4 Gaussian blobs in 8-D, 256 samples, full batch.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <memory>

#include "tern/autodiff/autodiff.h"
#include "tern/base/philox.h"
#include "tern/ir/graph.h"
#include "tern/runtime/eager.h"
#include "tern/runtime/executable.h"
#include "tern/runtime/initializers.h"
#include "tests/support/random_tensor.h"

namespace tern {
namespace {

constexpr int64_t kBatch = 256, kDim = 8, kHidden = 16, kClasses = 4;
constexpr int kSteps = 200;
constexpr double kLossBound = 0.05;  // final training loss both optimizers must reach

struct Blobs {
  Tensor x;       // f32 [kBatch, kDim]
  Tensor labels;  // i64 [kBatch]
};

// Sample i belongs to class i % 4; its features are the class center (uniform in [-2, 2) per
// dim) plus N(0, 0.5^2) noise per dim (Box-Muller on a Philox stream).
Blobs make_blobs(uint64_t seed) {
  PhiloxStream rng(seed);
  std::vector<double> centers(kClasses * kDim);
  for (double& c : centers) c = -2.0 + 4.0 * rng.next_double();
  Blobs b{Tensor(DType::kF32, Shape({kBatch, kDim})), Tensor(DType::kI64, Shape({kBatch}))};
  for (int64_t i = 0; i < kBatch; ++i) {
    int64_t c = i % kClasses;
    b.labels.set(i, static_cast<double>(c));
    for (int64_t d = 0; d < kDim; ++d) {
      double u1 = 1.0 - rng.next_double(), u2 = rng.next_double();
      double noise = std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
      b.x.set(i * kDim + d, centers[static_cast<size_t>(c * kDim + d)] + 0.5 * noise);
    }
  }
  return b;
}

// Glorot-uniform weights (fixed seeds), zero biases, zero optimizer slots: identical for every
// store.
void init_variables(runtime::VariableStore& vars, const std::vector<std::string>& slots) {
  const runtime::init::Initializer glorot = runtime::init::glorot_uniform();
  const std::vector<std::pair<std::string, Tensor>> params = {
      {"W1", glorot(Shape({kDim, kHidden}), DType::kF32, 11)},
      {"b1", runtime::init::zeros()(Shape({kHidden}))},
      {"W2", glorot(Shape({kHidden, kClasses}), DType::kF32, 12)},
      {"b2", runtime::init::zeros()(Shape({kClasses}))}};
  for (const auto& [name, value] : params) {
    vars.create(name, value);
    for (const auto& s : slots) vars.create(name + "/" + s, Tensor(DType::kF32, value.shape()));
  }
}

struct TrainGraph {
  std::unique_ptr<ir::Graph> graph = std::make_unique<ir::Graph>("mlp_train_step");
  ir::Node* update = nullptr;
};

// One train step: loss = mean(sparse_softmax_cross_entropy(relu(x W1 + b1) W2 + b2, labels)),
// gradients by autodiff, then `optimizer` ("adam_update" or "sgd_update") over the 4 parameters.
// The update gets a control input from every other reader of a parameter, as the verifier demands.
TrainGraph build_train_step(const std::string& optimizer, const ops::Attrs& opt_attrs,
                            const std::vector<std::string>& slots) {
  TrainGraph t;
  ir::Graph& g = *t.graph;
  ir::Value* x = g.input("x", {DType::kF32, Shape({kBatch, kDim})});
  ir::Value* labels = g.input("labels", {DType::kI64, Shape({kBatch})});
  ir::Value* lr = g.input("lr", {DType::kF32, Shape({})});
  const std::vector<std::pair<std::string, Shape>> shapes = {{"W1", Shape({kDim, kHidden})},
                                                             {"b1", Shape({kHidden})},
                                                             {"W2", Shape({kHidden, kClasses})},
                                                             {"b2", Shape({kClasses})}};
  std::vector<ir::Value*> params;
  for (const auto& [name, shape] : shapes) params.push_back(g.variable(name, {DType::kF32, shape}));
  ir::Value* h = g.add("relu", {g.add("add", {g.add("matmul", {x, params[0]}), params[1]})});
  ir::Value* logits = g.add("add", {g.add("matmul", {h, params[2]}), params[3]});
  ir::Node* xent = g.add_node("sparse_softmax_cross_entropy", {logits, labels});
  ir::Value* loss =
      g.add("mean", {xent->output(0)}, {{"axes", std::vector<int64_t>{}}, {"keepdims", false}});
  std::vector<ir::Value*> grads = autodiff::gradients(g, loss, params);

  std::vector<ir::Value*> inputs = {lr};
  if (optimizer != "sgd_update") {
    inputs.push_back(g.input("step", {DType::kI64, Shape({})}));
  }
  inputs.insert(inputs.end(), params.begin(), params.end());
  inputs.insert(inputs.end(), grads.begin(), grads.end());
  for (const auto& s : slots) {
    for (const auto& [name, shape] : shapes) {
      inputs.push_back(g.variable(name + "/" + s, {DType::kF32, shape}));
    }
  }
  ops::Attrs attrs = opt_attrs;
  attrs.set("num_params", int64_t{4});
  t.update = g.add_node(optimizer, inputs, attrs, "update");
  for (ir::Value* p : params) {
    for (const ir::Use& u : p->uses()) {
      if (u.node != t.update) t.update->add_control_input(u.node);
    }
  }
  g.add_output("loss", loss);
  return t;
}

// Feeds for one step; `step` < 1 leaves out the step input (sgd has none).
runtime::Feeds step_feeds(const Blobs& data, double lr, int64_t step) {
  runtime::Feeds feeds = {
      {"x", data.x}, {"labels", data.labels}, {"lr", Tensor::scalar(DType::kF32, lr)}};
  if (step >= 1) feeds.push_back({"step", Tensor::scalar(DType::kI64, static_cast<double>(step))});
  return feeds;
}

TEST(MlpTrain, AdamGraphModeLearnsAndMatchesEagerEveryStep) {
  const std::vector<std::string> slots = {"m", "v"};
  TrainGraph t = build_train_step("adam_update", {}, slots);
  Blobs data = make_blobs(2024);
  const double lr = 0.01;

  runtime::VariableStore graph_vars, eager_vars;
  init_variables(graph_vars, slots);
  init_variables(eager_vars, slots);
  auto exe = runtime::Executable::compile(*t.graph, graph_vars);
  const size_t arena = exe->arena_bytes();

  std::vector<double> graph_loss, eager_loss;
  const void* loss_data = nullptr;
  for (int s = 1; s <= kSteps; ++s) {
    exe->feed("x", data.x);
    exe->feed("labels", data.labels);
    exe->feed("lr", Tensor::scalar(DType::kF32, lr));
    exe->feed("step", Tensor::scalar(DType::kI64, s));
    exe->run();
    // A compiled step reuses its planned buffers: same arena, same output memory every run.
    if (s == 1) loss_data = exe->output(0).raw_data();
    ASSERT_EQ(exe->output(0).raw_data(), loss_data) << "step " << s;
    ASSERT_EQ(exe->arena_bytes(), arena);
    graph_loss.push_back(exe->output(0).get(0));
    if (s == 1 || s % 50 == 0)
      std::cout << "adam step " << s << " loss " << graph_loss.back() << "\n";

    std::vector<Tensor> out =
        runtime::run_graph_eager(*t.graph, step_feeds(data, lr, s), &eager_vars);
    eager_loss.push_back(out.at(0).get(0));
  }
  EXPECT_EQ(exe->run_count(), kSteps);
  for (const runtime::StepInfo& info : exe->steps()) {
    if (info.op == "adam_update") {
      EXPECT_EQ(info.kernel, "cpu_vec") << "fused update kernel";
    }
  }
  double max_diff = 0;
  for (int s = 0; s < kSteps; ++s) {
    max_diff = std::max(max_diff, std::fabs(graph_loss[static_cast<size_t>(s)] -
                                            eager_loss[static_cast<size_t>(s)]));
    ASSERT_NEAR(graph_loss[static_cast<size_t>(s)], eager_loss[static_cast<size_t>(s)], 1e-5)
        << "graph and eager losses diverge at step " << s + 1;
  }
  std::cout << "max |graph - eager| loss over " << kSteps << " steps: " << max_diff << "\n";
  EXPECT_GT(graph_loss.front(), 0.5) << "the problem should not start solved";
  EXPECT_LT(graph_loss.back(), kLossBound);
  for (const std::string& name : graph_vars.names()) {
    EXPECT_LT(max_abs_diff(graph_vars.get(name), eager_vars.get(name)), 1e-4) << name;
  }
}

TEST(MlpTrain, SgdMomentumGraphModeLearns) {
  const std::vector<std::string> slots = {"velocity"};
  TrainGraph t = build_train_step("sgd_update", {{"momentum", 0.9}}, slots);
  Blobs data = make_blobs(7);
  runtime::VariableStore vars;
  init_variables(vars, slots);
  auto exe = runtime::Executable::compile(*t.graph, vars);
  exe->feed("x", data.x);
  exe->feed("labels", data.labels);
  exe->feed("lr", Tensor::scalar(DType::kF32, 0.1));
  double first = 0, last = 0;
  for (int s = 1; s <= kSteps; ++s) {
    exe->run();
    (s == 1 ? first : last) = exe->output(0).get(0);
    if (s == 1 || s % 50 == 0)
      std::cout << "sgd step " << s << " loss " << exe->output(0).get(0) << "\n";
  }
  EXPECT_GT(first, 0.5);
  EXPECT_LT(last, kLossBound);
}

// The gradients already depend on every forward reader of the weights; a reader outside that
// path (here a monitoring output sum(W1)) must be ordered before the update explicitly.
TEST(MlpTrain, ReaderOutsideTheGradientPathMustBeOrderedBeforeTheUpdate) {
  TrainGraph t = build_train_step("sgd_update", {}, {});
  ir::Graph& g = *t.graph;
  ir::Value* w1 = g.find_variable("W1")->output();
  ir::Value* w1_sum = g.add("sum", {w1}, {{"axes", std::vector<int64_t>{}}, {"keepdims", false}});
  g.add_output("w1_sum", w1_sum);
  runtime::VariableStore vars;
  init_variables(vars, {});
  EXPECT_TERN_ERROR(runtime::Executable::compile(g, vars), ErrorCode::kInternal,
                    "is not ordered before it");

  t.update->add_control_input(w1_sum->node());
  auto exe = runtime::Executable::compile(g, vars);
  Blobs data = make_blobs(3);
  double before = 0;
  for (int64_t i = 0; i < kDim * kHidden; ++i) before += vars.get("W1").get(i);
  std::vector<Tensor> out = exe->run(step_feeds(data, 0.1, 0));
  EXPECT_NEAR(out.at(1).get(0), before, 1e-4) << "the reader saw W1 after the update";
  double after = 0;
  for (int64_t i = 0; i < kDim * kHidden; ++i) after += vars.get("W1").get(i);
  EXPECT_GT(std::fabs(after - before), 1e-6) << "the update did not change W1";
}

}  // namespace
}  // namespace tern
