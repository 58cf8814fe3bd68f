// const_fold: text IR in, structure out; values come from the runtime's eager kernels.
#include "tern/passes/const_fold.h"

#include <cmath>

#include "tern/passes/pass_test_util.h"
#include "tern/runtime/eager.h"

namespace tern::passes {
namespace {

using testing::count_ops;
using testing::output_node;
using testing::parse;
using testing::run_pass;

NodeEvaluator eager_evaluator(int* calls = nullptr) {
  return [calls](const ir::Node& n, const std::vector<Tensor>& inputs) {
    if (calls) ++*calls;
    return runtime::eager_call(n.op_name(), inputs, n.attrs());
  };
}

const Tensor& value_of(const ir::Node& n) {
  return n.attrs().get_tensor("value");
}

TEST(ConstFold, FoldsChainsOfConstants) {
  auto g = parse(R"(graph @g {
    %x = input() {dtype=f32, name="x", shape=[2]}
    %a = constant() {value=tensor<f32[2]>[1, 4]}
    %b = constant() {value=tensor<f32[2]>[2, 0.5]}
    %m = mul(%a, %b)
    %s = sqrt(%m)
    %y = add(%x, %s)
    %two = split(%m) {axis=0, sizes=[1, 1]}
    return {"y": %y, "s": %s, "last": %two#1}
  })");
  ConstFold pass(eager_evaluator());
  EXPECT_TRUE(run_pass(pass, *g));
  EXPECT_EQ(count_ops(*g, "mul") + count_ops(*g, "sqrt") + count_ops(*g, "split"), 0u);
  const ir::Node& s = output_node(*g, "s");
  ASSERT_EQ(s.op_name(), "constant");
  EXPECT_EQ(value_of(s).to_doubles(), (std::vector<double>{std::sqrt(2.0f), std::sqrt(2.0f)}));
  EXPECT_EQ(value_of(output_node(*g, "last")).to_doubles(), (std::vector<double>{2}));
  EXPECT_EQ(output_node(*g, "y").op_name(), "add");  // reads an input
  EXPECT_FALSE(run_pass(pass, *g));
}

TEST(ConstFold, LeavesStatefulLargeAndOrderedNodes) {
  auto g = parse(R"(graph @g {
    %r = random_uniform() {shape=[3], seed=3}
    %e = exp(%r)
    %c = constant() {value=tensor<f32[]>[1]}
    %big = broadcast_to(%c) {shape=[512, 512]}
    %small = broadcast_to(%c) {shape=[4]}
    %v = variable() {dtype=f32, name="v", shape=[4]}
    %late = neg(%c) after(%e)
    %upd = assign(%v, %small)
    return {"e": %e, "big": %big, "late": %late}
  })");
  int calls = 0;
  ConstFold pass(eager_evaluator(&calls));
  EXPECT_TRUE(run_pass(pass, *g));
  EXPECT_EQ(calls, 1);  // only `small`: 16 bytes from a 4-byte scalar is fine, 1 MiB is not
  EXPECT_EQ(output_node(*g, "e").op_name(), "exp");
  EXPECT_EQ(output_node(*g, "big").op_name(), "broadcast_to");
  EXPECT_EQ(output_node(*g, "late").op_name(), "neg");
  EXPECT_EQ(g->find_node("upd")->input(1)->node()->op_name(), "constant");
}

TEST(ConstFold, LeavesNodesTheEvaluatorRejects) {
  auto g = parse(R"(graph @g {
    %p = constant() {value=tensor<f32[2, 2]>[1, 2, 3, 4]}
    %i = constant() {value=tensor<i64[1]>[7]}
    %bad = gather(%p, %i) {axis=0}
    return {"bad": %bad}
  })");
  ConstFold pass(eager_evaluator());
  EXPECT_FALSE(run_pass(pass, *g));  // index 7 is out of range: the error waits for run time
  EXPECT_EQ(output_node(*g, "bad").op_name(), "gather");
}

}  // namespace
}  // namespace tern::passes
