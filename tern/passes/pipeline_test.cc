// The default pipeline: its order, and optimized executables computing what unoptimized ones do
// (bit for bit in deterministic mode) on a training step with updates and control edges.
#include <gtest/gtest.h>

#include "tern/autodiff/autodiff.h"
#include "tern/ir/parser.h"
#include "tern/ir/printer.h"
#include "tern/passes/pass.h"
#include "tern/runtime/executable.h"
#include "tests/support/random_tensor.h"

namespace tern::passes {
namespace {

TEST(Pipeline, DefaultOrderAndDeterministicSubset) {
  PipelineOptions o;
  EXPECT_EQ(default_pipeline(o).names(),
            (std::vector<std::string>{"simplify", "cse", "dce", "fuse_norm_activation",
                                      "fuse_dropout_residual", "fuse_epilogue", "fuse_elementwise",
                                      "fuse_column_sum", "dce"}));
  o.evaluator = [](const ir::Node&, const std::vector<Tensor>&) { return std::vector<Tensor>{}; };
  EXPECT_EQ(
      default_pipeline(o).names(),
      (std::vector<std::string>{"simplify", "fold_batch_norm", "const_fold", "cse", "dce",
                                "fuse_norm_activation", "fuse_dropout_residual", "fuse_epilogue",
                                "fuse_elementwise", "fuse_column_sum", "dce"}));
  // pool_argmax where the device has the argmax kernels (the runtime asks the registry).
  o.pool_argmax = true;
  EXPECT_EQ(
      default_pipeline(o).names(),
      (std::vector<std::string>{"simplify", "fold_batch_norm", "const_fold", "cse", "dce",
                                "fuse_norm_activation", "pool_argmax", "fuse_dropout_residual",
                                "fuse_epilogue", "fuse_elementwise", "fuse_column_sum", "dce"}));
  o.deterministic = true;
  EXPECT_EQ(default_pipeline(o).names(),
            (std::vector<std::string>{"simplify", "const_fold", "cse", "dce"}));
  o.deterministic = false;
  o.pool_argmax = false;
  o.disabled = {"fuse_epilogue", "cse"};
  EXPECT_EQ(default_pipeline(o).names(),
            (std::vector<std::string>{"simplify", "fold_batch_norm", "const_fold", "dce",
                                      "fuse_norm_activation", "fuse_dropout_residual",
                                      "fuse_elementwise", "fuse_column_sum", "dce"}));
}

TEST(Pipeline, FrozenWeightsPipeline) {
  PipelineOptions o;
  o.evaluator = [](const ir::Node&, const std::vector<Tensor>&) { return std::vector<Tensor>{}; };
  EXPECT_EQ(frozen_weights_pipeline(o).names(),
            (std::vector<std::string>{"fold_batch_norm", "const_fold", "dce"}));
  o.deterministic = true;
  EXPECT_EQ(frozen_weights_pipeline(o).names(), (std::vector<std::string>{"const_fold", "dce"}));
  o.deterministic = false;
  o.disabled = {"fold_batch_norm"};
  EXPECT_EQ(frozen_weights_pipeline(o).names(), (std::vector<std::string>{"const_fold", "dce"}));
}

constexpr int64_t kBatch = 16, kDim = 12, kHidden = 32;

// One SGD step of y = tanh(gelu(x W1 + b1) W2 + b2 + x Wr) * 0.5 + 0.1, loss = mean(y^2), with
// the update ordered after every read of a parameter.
std::unique_ptr<ir::Graph> train_step() {
  auto g = std::make_unique<ir::Graph>("train_step");
  ir::Value* x = g->input("x", {DType::kF32, Shape{kBatch, kDim}});
  ir::Value* lr = g->input("lr", {DType::kF32, Shape{}});
  std::vector<ir::Value*> params = {g->variable("w1", {DType::kF32, Shape{kDim, kHidden}}),
                                    g->variable("b1", {DType::kF32, Shape{kHidden}}),
                                    g->variable("w2", {DType::kF32, Shape{kHidden, kDim}}),
                                    g->variable("b2", {DType::kF32, Shape{kDim}}),
                                    g->variable("wr", {DType::kF32, Shape{kDim, kDim}})};
  ir::Value* h = g->add("gelu", {g->add("add", {g->add("matmul", {x, params[0]}), params[1]})},
                        {{"approximate", true}});
  ir::Value* skip = g->add("matmul", {x, params[4]});
  ir::Value* z =
      g->add("add", {g->add("add", {g->add("matmul", {h, params[2]}), params[3]}), skip});
  ir::Value* y = g->add("add", {g->add("mul", {g->add("tanh", {z}), g->scalar(DType::kF32, 0.5)}),
                                g->scalar(DType::kF32, 0.1)});
  ir::Value* loss = g->add("mean", {g->add("square", {y})}, {{"axes", std::vector<int64_t>{}}});
  std::vector<ir::Value*> grads = autodiff::gradients(*g, loss, params);
  std::vector<ir::Value*> inputs = {lr};
  inputs.insert(inputs.end(), params.begin(), params.end());
  inputs.insert(inputs.end(), grads.begin(), grads.end());
  ir::Node* update = g->add_node("sgd_update", inputs, {{"num_params", int64_t{5}}}, "update");
  for (ir::Value* p : params) {
    for (const ir::Use& u : p->uses()) {
      if (u.node != update) update->add_control_input(u.node);
    }
  }
  g->add_output("loss", loss);
  g->add_output("y", y);
  return g;
}

void init_vars(runtime::VariableStore& vars) {
  uint64_t seed = 11;
  for (auto [name, shape] : std::vector<std::pair<const char*, Shape>>{{"w1", {kDim, kHidden}},
                                                                       {"b1", {kHidden}},
                                                                       {"w2", {kHidden, kDim}},
                                                                       {"b2", {kDim}},
                                                                       {"wr", {kDim, kDim}}}) {
    vars.create(name, tern::testing::random_tensor(DType::kF32, shape, seed++, -0.5, 0.5));
  }
}

struct TrainRun {
  std::vector<Tensor> losses;
  std::vector<Tensor> weights;
  std::unique_ptr<runtime::Executable> exe;
};

TrainRun train(const ir::Graph& g, runtime::CompileOptions options, int steps) {
  runtime::VariableStore vars;
  init_vars(vars);
  TrainRun r;
  r.exe = runtime::Executable::compile(g, vars, options);
  runtime::Feeds feeds = {{"x", tern::testing::random_tensor(DType::kF32, Shape{kBatch, kDim}, 3)},
                          {"lr", Tensor::scalar(DType::kF32, 0.1)}};
  for (int i = 0; i < steps; ++i) r.losses.push_back(r.exe->run(feeds)[0]);
  for (const char* w : {"w1", "b1", "w2", "b2", "wr"}) r.weights.push_back(vars.get(w).clone());
  return r;
}

TEST(Pipeline, OptimizedTrainingMatchesUnoptimized) {
  auto g = train_step();
  runtime::CompileOptions plain;
  plain.optimize = false;
  TrainRun want = train(*g, plain, 5);
  TrainRun got = train(*g, {}, 5);
  const ir::Graph& opt = got.exe->graph();
  EXPECT_EQ(opt.nodes_of("fused_matmul").size(), 3u) << ir::print_graph(opt);
  EXPECT_GE(opt.nodes_of("fused_elementwise").size(), 1u);
  // The bias gradients, sum(gelu_grad(...)) for b1 and the sum of the fused tanh gradient for b2,
  // are summed in their producers' passes.
  size_t column_sums = 0;
  for (const ir::Node* n : opt.nodes_of("fused_elementwise")) {
    column_sums += n->attrs().get_bool("column_sum") ? 1 : 0;
  }
  EXPECT_EQ(column_sums, 2u) << ir::print_graph(opt);
  EXPECT_LT(got.exe->steps().size(), want.exe->steps().size());
  for (int i = 0; i < 5; ++i) {
    EXPECT_TRUE(allclose(got.losses[i], want.losses[i], 1e-4, 1e-6))
        << "step " << i << ": " << got.losses[i] << " vs " << want.losses[i];
  }
  for (size_t i = 0; i < want.weights.size(); ++i) {
    EXPECT_TRUE(allclose(got.weights[i], want.weights[i], 1e-4, 1e-6)) << "weight " << i;
  }
  bool reported = false;
  for (const PassStats& s : got.exe->pass_stats()) {
    if (s.pass == "fuse_epilogue") {
      reported = s.op_changes.find("+3 fused_matmul") != std::string::npos;
      EXPECT_TRUE(reported) << s.op_changes;
    }
  }
  EXPECT_TRUE(reported);
}

TEST(Pipeline, DeterministicOptimizationIsBitExact) {
  auto g = train_step();
  runtime::CompileOptions plain;
  plain.optimize = false;
  plain.deterministic = true;
  runtime::CompileOptions optimized = plain;
  optimized.optimize = true;
  TrainRun want = train(*g, plain, 3);
  TrainRun got = train(*g, optimized, 3);
  EXPECT_TRUE(got.exe->graph().nodes_of("fused_matmul").empty());
  EXPECT_LT(got.exe->graph().num_nodes(), want.exe->graph().num_nodes());  // const_fold and dce ran
  for (int i = 0; i < 3; ++i)
    EXPECT_TRUE(bitwise_equal(got.losses[i], want.losses[i])) << "step " << i;
  for (size_t i = 0; i < want.weights.size(); ++i)
    EXPECT_TRUE(bitwise_equal(got.weights[i], want.weights[i]));
}

TEST(Pipeline, ConvEpilogueMatchesUnoptimized) {
  auto g = ir::parse_graph(R"(graph @cnn {
    %x = input() {dtype=f32, name="x", shape=[2, 9, 9, 3]}
    %k1 = variable() {dtype=f32, name="k1", shape=[3, 3, 3, 8]}
    %b1 = variable() {dtype=f32, name="b1", shape=[8]}
    %k2 = variable() {dtype=f32, name="k2", shape=[3, 3, 8, 8]}
    %c1 = conv2d(%x, %k1) {padding="SAME"}
    %z1 = add(%c1, %b1)
    %h1 = relu(%z1)
    %c2 = conv2d(%h1, %k2) {padding="SAME", strides=[2, 2]}
    %p = max_pool2d(%h1) {ksize=[2, 2], strides=[2, 2], padding="SAME"}
    %s = add(%c2, %p)
    %y = tanh(%s)
    return {"y": %y}
  })");
  runtime::VariableStore vars;
  vars.create("k1", tern::testing::random_tensor(DType::kF32, Shape{3, 3, 3, 8}, 1));
  vars.create("b1", tern::testing::random_tensor(DType::kF32, Shape{8}, 2));
  vars.create("k2", tern::testing::random_tensor(DType::kF32, Shape{3, 3, 8, 8}, 3, -0.3, 0.3));
  runtime::Feeds feeds = {{"x", tern::testing::random_tensor(DType::kF32, Shape{2, 9, 9, 3}, 4)}};
  runtime::CompileOptions plain;
  plain.optimize = false;
  auto want = runtime::Executable::compile(*g, vars, plain)->run(feeds);
  auto exe = runtime::Executable::compile(*g, vars, {});
  std::vector<ir::Node*> fused = exe->graph().nodes_of("fused_conv2d");
  ASSERT_EQ(fused.size(), 2u) << ir::print_graph(exe->graph());
  auto got = exe->run(feeds);
  EXPECT_TRUE(allclose(got[0], want[0], 1e-5, 1e-6)) << max_abs_diff(got[0], want[0]);
}

}  // namespace
}  // namespace tern::passes
