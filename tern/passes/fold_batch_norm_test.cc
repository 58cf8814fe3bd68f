// fold_batch_norm: which batch norms fold (constant weights and statistics after a conv2d or a
// plain matmul) and which stay; folded graphs, compiled through the whole pipeline, compute what
// the unfolded ones do.
#include "tern/passes/fold_batch_norm.h"

#include "tern/ir/clone.h"
#include "tern/ir/printer.h"
#include "tern/passes/pass_test_util.h"
#include "tern/runtime/executable.h"
#include "tests/support/random_tensor.h"

namespace tern::passes {
namespace {

using testing::count_ops;
using testing::run_pass;

constexpr int64_t kC = 8;

struct BnParams {
  ir::Value* gamma;
  ir::Value* beta;
  ir::Value* mean;
  ir::Value* var;
};

// Per-channel statistics as a trained model has them (var > 0, gamma of either sign).
BnParams constant_params(ir::Graph& g, DType dtype = DType::kF32, uint64_t seed = 20) {
  return {g.constant(tern::testing::random_tensor(dtype, Shape{kC}, seed, -1.5, 1.5)),
          g.constant(tern::testing::random_tensor(dtype, Shape{kC}, seed + 1, -0.5, 0.5)),
          g.constant(tern::testing::random_tensor(dtype, Shape{kC}, seed + 2, -0.3, 0.3)),
          g.constant(tern::testing::random_tensor(dtype, Shape{kC}, seed + 3, 0.2, 2.0))};
}

ir::Value* batch_norm(ir::Graph& g, ir::Value* x, const BnParams& p) {
  return g.add("batch_norm_inference", {x, p.gamma, p.beta, p.mean, p.var}, {{"epsilon", 1e-3}});
}

// x [2, 7, 7, 3] -> conv2d 3x3 SAME to kC channels, the filter a constant.
ir::Value* conv(ir::Graph& g, ir::Value* x, DType dtype = DType::kF32, uint64_t seed = 1) {
  ir::Value* w = g.constant(tern::testing::random_tensor(dtype, Shape{3, 3, 3, kC}, seed));
  return g.add("conv2d", {x, w}, {{"padding", std::string("SAME")}});
}

// The graph compiled with every pass and without any, on the same input: the folded result
// must be the unfolded one up to rounding. Returns the optimized executable's graph's printout
// for the caller's structural checks.
std::unique_ptr<runtime::Executable> expect_same_as_unoptimized(const ir::Graph& g,
                                                                const Shape& x_shape) {
  runtime::VariableStore vars;
  runtime::Feeds feeds = {{"x", tern::testing::random_tensor(DType::kF32, x_shape, 9)}};
  runtime::CompileOptions plain;
  plain.optimize = false;
  std::vector<Tensor> want = runtime::Executable::compile(g, vars, plain)->run(feeds);
  auto exe = runtime::Executable::compile(g, vars, {});
  std::vector<Tensor> got = exe->run(feeds);
  EXPECT_TRUE(allclose(got[0], want[0], 1e-5, 1e-5)) << max_abs_diff(got[0], want[0]) << "\n"
                                                     << ir::print_graph(exe->graph());
  return exe;
}

TEST(FoldBatchNorm, ConvBatchNormReluBecomesOneFusedConvolution) {
  ir::Graph g;
  ir::Value* x = g.input("x", {DType::kF32, Shape{2, 7, 7, 3}});
  g.add_output("y", g.add("relu", {batch_norm(g, conv(g, x), constant_params(g))}));
  FoldBatchNorm pass;
  auto folded = ir::clone_graph(g);
  EXPECT_TRUE(run_pass(pass, *folded));
  EXPECT_EQ(count_ops(*folded, "batch_norm_inference"), 0u);
  EXPECT_EQ(count_ops(*folded, "conv2d"), 1u);

  auto exe = expect_same_as_unoptimized(g, Shape{2, 7, 7, 3});
  const ir::Graph& opt = exe->graph();
  ASSERT_EQ(count_ops(opt, "fused_conv2d"), 1u) << ir::print_graph(opt);
  const ir::Node& fused = *opt.nodes_of("fused_conv2d")[0];
  EXPECT_TRUE(fused.attrs().get_bool("has_bias"));
  EXPECT_EQ(fused.attrs().get_string("activation"), "relu");
  EXPECT_EQ(count_ops(opt, "batch_norm_inference"), 0u);
  EXPECT_EQ(exe->steps().size(), 1u);  // the weight and shift arithmetic was folded away
}

// A ResNet block's tail: conv (with a bias add before the norm) -> bn -> add(shortcut) -> relu.
TEST(FoldBatchNorm, BiasBeforeTheNormAndTheResidualAfterIt) {
  ir::Graph g;
  ir::Value* x = g.input("x", {DType::kF32, Shape{2, 7, 7, 3}});
  ir::Value* b = g.constant(tern::testing::random_tensor(DType::kF32, Shape{kC}, 30));
  ir::Value* main = batch_norm(g, g.add("add", {conv(g, x), b}), constant_params(g));
  ir::Value* shortcut =
      batch_norm(g, conv(g, x, DType::kF32, 2), constant_params(g, DType::kF32, 40));
  g.add_output("y", g.add("relu", {g.add("add", {main, shortcut})}));
  auto exe = expect_same_as_unoptimized(g, Shape{2, 7, 7, 3});
  const ir::Graph& opt = exe->graph();
  EXPECT_EQ(count_ops(opt, "batch_norm_inference"), 0u) << ir::print_graph(opt);
  EXPECT_EQ(count_ops(opt, "fused_conv2d"), 2u) << ir::print_graph(opt);
  EXPECT_EQ(exe->steps().size(), 2u);
}

TEST(FoldBatchNorm, DenseLayerBeforeTheNorm) {
  ir::Graph g;
  ir::Value* x = g.input("x", {DType::kF32, Shape{4, 6}});
  ir::Value* w = g.constant(tern::testing::random_tensor(DType::kF32, Shape{6, kC}, 5));
  g.add_output("y", batch_norm(g, g.add("matmul", {x, w}), constant_params(g)));
  auto exe = expect_same_as_unoptimized(g, Shape{4, 6});
  EXPECT_EQ(count_ops(exe->graph(), "batch_norm_inference"), 0u);
  EXPECT_EQ(exe->steps().size(), 1u) << ir::print_graph(exe->graph());
}

// Each case keeps its batch norm: folding would compute the weight product at every run, change
// what another reader sees, or is not one this pass does.
TEST(FoldBatchNorm, LeavesWhatItCannotFoldOnce) {
  auto unchanged = [](ir::Graph& g, const char* why) {
    FoldBatchNorm pass;
    EXPECT_FALSE(run_pass(pass, g)) << why;
    EXPECT_EQ(count_ops(g, "batch_norm_inference"), 1u) << why;
  };
  {  // statistics in variables (a model being trained or evaluated between steps)
    ir::Graph g;
    ir::Value* x = g.input("x", {DType::kF32, Shape{2, 7, 7, 3}});
    BnParams p = constant_params(g);
    p.var = g.variable("var", {DType::kF32, Shape{kC}});
    g.add_output("y", batch_norm(g, conv(g, x), p));
    unchanged(g, "variable statistics");
  }
  {  // the filter a variable
    ir::Graph g;
    ir::Value* x = g.input("x", {DType::kF32, Shape{2, 7, 7, 3}});
    ir::Value* w = g.variable("w", {DType::kF32, Shape{3, 3, 3, kC}});
    g.add_output("y", batch_norm(g, g.add("conv2d", {x, w}), constant_params(g)));
    unchanged(g, "variable filter");
  }
  {  // the convolution's output read by another node too
    ir::Graph g;
    ir::Value* x = g.input("x", {DType::kF32, Shape{2, 7, 7, 3}});
    ir::Value* c = conv(g, x);
    g.add_output("y", batch_norm(g, c, constant_params(g)));
    g.add_output("c", c);
    unchanged(g, "second reader");
  }
  {  // bf16: the folded weight would be rounded again
    ir::Graph g;
    ir::Value* x = g.input("x", {DType::kBF16, Shape{2, 7, 7, 3}});
    g.add_output("y", batch_norm(g, conv(g, x, DType::kBF16), constant_params(g, DType::kBF16)));
    unchanged(g, "bf16");
  }
  {  // a transposed matmul weight: its output channel is not the last dim
    ir::Graph g;
    ir::Value* x = g.input("x", {DType::kF32, Shape{4, 6}});
    ir::Value* w = g.constant(tern::testing::random_tensor(DType::kF32, Shape{kC, 6}, 5));
    g.add_output(
        "y", batch_norm(g, g.add("matmul", {x, w}, {{"transpose_b", true}}), constant_params(g)));
    unchanged(g, "transpose_b");
  }
  {  // a control edge on the convolution
    ir::Graph g;
    ir::Value* x = g.input("x", {DType::kF32, Shape{2, 7, 7, 3}});
    ir::Value* first = g.add("exp", {x});
    ir::Value* c = conv(g, x);
    c->node()->add_control_input(first->node());
    g.add_output("first", first);
    g.add_output("y", batch_norm(g, c, constant_params(g)));
    unchanged(g, "control edge");
  }
}

TEST(FoldBatchNorm, NotInDeterministicPipelines) {
  ir::Graph g;
  ir::Value* x = g.input("x", {DType::kF32, Shape{2, 7, 7, 3}});
  g.add_output("y", batch_norm(g, conv(g, x), constant_params(g)));
  runtime::VariableStore vars;
  runtime::CompileOptions det;
  det.deterministic = true;
  auto exe = runtime::Executable::compile(g, vars, det);
  EXPECT_EQ(count_ops(exe->graph(), "batch_norm_inference"), 1u);
  runtime::CompileOptions disabled;
  disabled.disabled_passes = {"fold_batch_norm"};
  exe = runtime::Executable::compile(g, vars, disabled);
  EXPECT_EQ(count_ops(exe->graph(), "batch_norm_inference"), 1u);
}

}  // namespace
}  // namespace tern::passes
