// cse: text IR in, structure out.
#include "tern/passes/cse.h"

#include "tern/passes/pass_test_util.h"

namespace tern::passes {
namespace {

using testing::count_ops;
using testing::output_node;
using testing::parse;
using testing::run_pass;

TEST(Cse, MergesIdenticalPureNodes) {
  auto g = parse(R"(graph @g {
    %x = input() {dtype=f32, name="x", shape=[4]}
    %y = input() {dtype=f32, name="y", shape=[4]}
    %a = add(%x, %y)
    %b = add(%y, %x)
    %e1 = exp(%a)
    %e2 = exp(%b)
    %m = mul(%e1, %e2)
    return {"m": %m, "b": %b}
  })");
  Cse cse;
  EXPECT_TRUE(run_pass(cse, *g));
  EXPECT_EQ(count_ops(*g, "add"), 1u);  // add is commutative
  EXPECT_EQ(count_ops(*g, "exp"), 1u);
  const ir::Node& m = output_node(*g, "m");
  EXPECT_EQ(m.input(0), m.input(1));
  EXPECT_EQ(output_node(*g, "b").name(), "a");  // graph outputs follow the merge
  EXPECT_FALSE(run_pass(cse, *g));
}

TEST(Cse, KeepsNodesThatDiffer) {
  auto g = parse(R"(graph @g {
    %x = input() {dtype=f32, name="x", shape=[4, 3]}
    %s0 = sum(%x) {axes=[0]}
    %s1 = sum(%x) {axes=[1]}
    %d1 = sub(%x, %x)
    %r1 = random_uniform() {shape=[2], seed=1}
    %r2 = random_uniform() {shape=[2], seed=1}
    %i2 = input() {dtype=f32, name="x2", shape=[4, 3]}
    return {"s0": %s0, "s1": %s1, "r1": %r1, "r2": %r2, "d": %d1}
  })");
  Cse cse;
  EXPECT_FALSE(run_pass(cse, *g));
  EXPECT_EQ(count_ops(*g, "sum"), 2u);
  EXPECT_EQ(count_ops(*g, "random_uniform"), 2u);
  EXPECT_EQ(count_ops(*g, "input"), 2u);
}

TEST(Cse, MergesEqualConstantsOnly) {
  auto g = parse(R"(graph @g {
    %a = constant() {value=tensor<f32[2]>[1, 2]}
    %b = constant() {value=tensor<f32[2]>[1, 2]}
    %c = constant() {value=tensor<f32[2]>[1, 3]}
    %d = constant() {value=tensor<f64[2]>[1, 2]}
    %z1 = constant() {value=tensor<f32[]>[0]}
    %z2 = constant() {value=tensor<f32[]>[-0]}
    return {"a": %a, "b": %b, "c": %c, "d": %d, "z1": %z1, "z2": %z2}
  })");
  Cse cse;
  EXPECT_TRUE(run_pass(cse, *g));
  EXPECT_EQ(count_ops(*g, "constant"), 5u);
  EXPECT_EQ(&output_node(*g, "a"), &output_node(*g, "b"));
  EXPECT_NE(&output_node(*g, "z1"), &output_node(*g, "z2"));  // +0 and -0 differ in bits
}

TEST(Cse, RespectsControlEdges) {
  // Nodes after different control inputs stay apart; a merged node's control successors move to
  // the survivor.
  auto g = parse(R"(graph @g {
    %v = variable() {dtype=f32, name="v", shape=[3]}
    %x = input() {dtype=f32, name="x", shape=[3]}
    %before = neg(%v)
    %other = exp(%x)
    %late = neg(%v) after(%other)
    %before2 = neg(%v)
    %waits = exp(%x) after(%before2)
    %upd = assign(%v, %x) after(%before, %late, %before2)
    return {"before": %before, "late": %late, "b2": %before2, "waits": %waits}
  })");
  Cse cse;
  EXPECT_TRUE(run_pass(cse, *g));
  EXPECT_EQ(count_ops(*g, "neg"), 2u);
  EXPECT_EQ(&output_node(*g, "before"), &output_node(*g, "b2"));
  EXPECT_NE(&output_node(*g, "before"), &output_node(*g, "late"));
  EXPECT_EQ(count_ops(*g, "exp"), 2u);  // `waits` has a control input, `other` has none
  const auto& ctl = output_node(*g, "waits").control_inputs();
  ASSERT_EQ(ctl.size(), 1u);
  EXPECT_EQ(ctl[0], &output_node(*g, "before"));
}

}  // namespace
}  // namespace tern::passes
