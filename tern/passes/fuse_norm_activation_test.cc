// fuse_norm_activation: structure of the folded batch norms, what is left alone, and the folded
// graph's results against the unfolded one's (bit for bit, f32 and the mixed bf16 form, on the
// fast kernels and on ref).
#include "tern/passes/fuse_norm_activation.h"

#include "tern/passes/pass_test_util.h"
#include "tern/runtime/eager.h"
#include "tests/support/random_tensor.h"

namespace tern::passes {
namespace {

using testing::count_ops;
using testing::output_node;
using testing::parse;
using testing::run_pass;

// One training step's batch norm and relu, forward and backward: y = relu(bn(x)) and the
// gradients of x, gamma and beta for an incoming dy. `x_dtype` bf16 gives the mixed form. With
// `residual`, a ResNet block's end: y = relu(bn(x) + s), and the shortcut's gradient (relu_grad's
// result, then read twice, so only the forward folds) is an output too.
std::string step_text(const char* x_dtype, bool residual = false) {
  const std::string act = str_cat("dtype=", x_dtype, ", shape=[4, 6, 6, 32]");
  return str_cat(R"(graph @g {
    %x = input() {name="x", )",
                 act, R"(}
    %s = input() {name="s", )",
                 act, R"(}
    %dy = input() {name="dy", )",
                 act, R"(}
    %gamma = input() {dtype=f32, name="gamma", shape=[32]}
    %beta = input() {dtype=f32, name="beta", shape=[32]}
    %bn = batch_norm_training(%x, %gamma, %beta)
    )",
                 residual ? "%a = add(%bn, %s)\n    %y = relu(%a)" : "%y = relu(%bn)", R"(
    %dz = relu_grad(%dy, %y)
    %bg = batch_norm_grad(%dz, %x, %gamma, %bn#1, %bn#2)
    return {"y": %y, "mean": %bn#1, "var": %bn#2, "dx": %bg, "dgamma": %bg#1, "dbeta": %bg#2)",
                 residual ? R"(, "ds": %dz})" : "}", "\n  }");
}

TEST(FuseNormActivation, ResidualAddAndReluFoldIntoTheBatchNorm) {
  auto g = parse(step_text("f32", /*residual=*/true));
  FuseNormActivation pass;
  EXPECT_TRUE(run_pass(pass, *g));
  EXPECT_EQ(count_ops(*g, "add") + count_ops(*g, "relu"), 0u);
  const ir::Node& bn = output_node(*g, "y");
  ASSERT_EQ(bn.op_name(), "batch_norm_training");
  EXPECT_EQ(bn.attrs().get_string("activation"), "relu");
  ASSERT_EQ(bn.num_inputs(), 4);
  EXPECT_EQ(bn.input(3)->node()->name(), "s");
  EXPECT_EQ(&output_node(*g, "mean"), &bn);
  // relu's gradient reads relu's output, now the fused node's.
  const ir::Node& dz = output_node(*g, "ds");
  ASSERT_EQ(dz.op_name(), "relu_grad");
  EXPECT_EQ(dz.input(1), bn.output(0));
  EXPECT_EQ(output_node(*g, "dx").attrs().get_string("activation"), "none");
  EXPECT_FALSE(run_pass(pass, *g));

  // Shortcut first, and a sum read by more than the relu: the add folds, the relu stays.
  auto h = parse(R"(graph @g {
    %x = input() {dtype=f32, name="x", shape=[8, 4]}
    %s = input() {dtype=f32, name="s", shape=[8, 4]}
    %gamma = input() {dtype=f32, name="gamma", shape=[4]}
    %beta = input() {dtype=f32, name="beta", shape=[4]}
    %bn = batch_norm_training(%x, %gamma, %beta)
    %a = add(%s, %bn)
    %y = relu(%a)
    return {"y": %y, "a": %a}
  })");
  EXPECT_TRUE(run_pass(pass, *h));
  const ir::Node& sum = output_node(*h, "a");
  ASSERT_EQ(sum.op_name(), "batch_norm_training");
  EXPECT_EQ(sum.attrs().get_string("activation"), "none");
  EXPECT_EQ(sum.input(3)->node()->name(), "s");
  EXPECT_EQ(output_node(*h, "y").op_name(), "relu");
}

TEST(FuseNormActivation, BroadcastAndSelfAddsStay) {
  auto g = parse(R"(graph @g {
    %x = input() {dtype=f32, name="x", shape=[8, 4]}
    %b = input() {dtype=f32, name="b", shape=[4]}
    %gamma = input() {dtype=f32, name="gamma", shape=[4]}
    %beta = input() {dtype=f32, name="beta", shape=[4]}
    %bn = batch_norm_training(%x, %gamma, %beta)
    %a = add(%bn, %b)
    %bn2 = batch_norm_training(%x, %gamma, %beta) {epsilon=0.01}
    %d = add(%bn2, %bn2)
    return {"a": %a, "d": %d}
  })");
  FuseNormActivation pass;
  EXPECT_FALSE(run_pass(pass, *g));
  EXPECT_EQ(count_ops(*g, "add"), 2u);
}

TEST(FuseNormActivation, ReluAndItsGradientFoldIntoTheBatchNorms) {
  auto g = parse(step_text("f32"));
  FuseNormActivation pass;
  EXPECT_TRUE(run_pass(pass, *g));
  EXPECT_EQ(count_ops(*g, "relu") + count_ops(*g, "relu_grad"), 0u);
  const ir::Node& bn = output_node(*g, "y");
  ASSERT_EQ(bn.op_name(), "batch_norm_training");
  EXPECT_EQ(bn.attrs().get_string("activation"), "relu");
  EXPECT_EQ(&output_node(*g, "mean"), &bn);
  EXPECT_EQ(&output_node(*g, "var"), &bn);
  const ir::Node& bg = output_node(*g, "dx");
  ASSERT_EQ(bg.op_name(), "batch_norm_grad");
  EXPECT_EQ(bg.attrs().get_string("activation"), "relu");
  ASSERT_EQ(bg.num_inputs(), 6);
  EXPECT_EQ(bg.input(0)->node()->name(), "dy");  // dy itself, gated in the kernel
  EXPECT_EQ(bg.input(5), bn.output(0));          // by the folded forward's output
  EXPECT_EQ(&output_node(*g, "dgamma"), &bg);
  EXPECT_FALSE(run_pass(pass, *g));
}

TEST(FuseNormActivation, ValuesReadElsewhereStay) {
  // The normalized value is also an output, and the masked gradient has a second reader.
  auto g = parse(R"(graph @g {
    %x = input() {dtype=f32, name="x", shape=[8, 4]}
    %dy = input() {dtype=f32, name="dy", shape=[8, 4]}
    %gamma = input() {dtype=f32, name="gamma", shape=[4]}
    %beta = input() {dtype=f32, name="beta", shape=[4]}
    %bn = batch_norm_training(%x, %gamma, %beta)
    %y = relu(%bn)
    %dz = relu_grad(%dy, %y)
    %bg = batch_norm_grad(%dz, %x, %gamma, %bn#1, %bn#2)
    return {"y": %y, "bn": %bn, "dx": %bg, "dz": %dz}
  })");
  FuseNormActivation pass;
  EXPECT_FALSE(run_pass(pass, *g));
  EXPECT_EQ(count_ops(*g, "relu"), 1u);
  EXPECT_EQ(count_ops(*g, "relu_grad"), 1u);
  EXPECT_EQ(output_node(*g, "dx").attrs().get_string("activation"), "none");
}

TEST(FuseNormActivation, OtherActivationsAndOrdersStay) {
  // A gelu after the batch norm, and a relu before it, stay as they are.
  auto g = parse(R"(graph @g {
    %x = input() {dtype=f32, name="x", shape=[8, 4]}
    %gamma = input() {dtype=f32, name="gamma", shape=[4]}
    %beta = input() {dtype=f32, name="beta", shape=[4]}
    %r = relu(%x)
    %bn = batch_norm_training(%r, %gamma, %beta)
    %y = gelu(%bn)
    return {"y": %y}
  })");
  FuseNormActivation pass;
  EXPECT_FALSE(run_pass(pass, *g));
  EXPECT_EQ(output_node(*g, "y").op_name(), "gelu");
}

// Runs the step graph folded and unfolded on the same inputs; every output bit for bit.
void expect_same_results(bool residual, DType x_dtype, const runtime::EagerOptions& options) {
  SCOPED_TRACE(
      str_cat(dtype_name(x_dtype), residual ? " residual" : "", " kernels ", options.kernel));
  const char* name = x_dtype == DType::kBF16 ? "bf16" : "f32";
  auto plain = parse(step_text(name, residual));
  auto folded = parse(step_text(name, residual));
  FuseNormActivation pass;
  ASSERT_TRUE(run_pass(pass, *folded));
  const Shape act{4, 6, 6, 32};
  runtime::Feeds feeds = {
      {"x", tern::testing::random_tensor(x_dtype, act, 11, -2, 3)},
      {"dy", tern::testing::random_tensor(x_dtype, act, 12)},
      {"gamma", tern::testing::random_tensor(DType::kF32, Shape{32}, 13, 0.5, 1.5)},
      {"beta", tern::testing::random_tensor(DType::kF32, Shape{32}, 14)},
      {"s", tern::testing::random_tensor(x_dtype, act, 15, -2, 2)}};
  std::vector<Tensor> want = runtime::run_graph_eager(*plain, feeds, nullptr, options);
  std::vector<Tensor> got = runtime::run_graph_eager(*folded, feeds, nullptr, options);
  ASSERT_EQ(got.size(), want.size());
  int64_t zeros = 0;
  for (int64_t e = 0; e < want[0].num_elements(); ++e) zeros += want[0].get(e) == 0;
  EXPECT_GT(zeros, want[0].num_elements() / 4);  // the relu masks a good share
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_TRUE(bitwise_equal(got[i], want[i])) << plain->outputs()[i].name;
  }
}

TEST(FuseNormActivation, FoldedStepMatchesTheUnfoldedOneBitForBit) {
  runtime::EagerOptions fast, ref;
  ref.kernel = "ref";
  for (DType d : {DType::kF32, DType::kBF16}) {
    for (bool residual : {false, true}) {
      expect_same_results(residual, d, fast);
      expect_same_results(residual, d, ref);
    }
  }
}

}  // namespace
}  // namespace tern::passes
