// fuse_elementwise: text IR in, structure out.
#include "tern/passes/fuse_elementwise.h"

#include "tern/ops/fused_program.h"
#include "tern/passes/pass_test_util.h"

namespace tern::passes {
namespace {

using testing::count_ops;
using testing::output_node;
using testing::parse;
using testing::run_pass;

ops::FusedProgram program_of(const ir::Node& n) {
  ops::FusedProgram p;
  std::string problem = ops::decode_fused_program(n.attrs(), n.num_inputs(), &p);
  EXPECT_EQ(problem, "");
  return p;
}

TEST(FuseElementwise, ChainBecomesOneLoop) {
  auto g = parse(R"(graph @g {
    %x = input() {dtype=f32, name="x", shape=[4, 8]}
    %b = input() {dtype=f32, name="b", shape=[8]}
    %half = constant() {value=tensor<f32[]>[0.5]}
    %a = add(%x, %b)
    %m = mul(%a, %half)
    %t = tanh(%m)
    %y = mul(%t, %x)
    return {"y": %y}
  })");
  FuseElementwise pass;
  EXPECT_TRUE(run_pass(pass, *g));
  EXPECT_EQ(count_ops(*g, "add") + count_ops(*g, "mul") + count_ops(*g, "tanh"), 0u);
  const ir::Node& f = output_node(*g, "y");
  ASSERT_EQ(f.op_name(), "fused_elementwise");
  ASSERT_EQ(f.num_inputs(), 2);  // x and the broadcast b; 0.5 became an immediate
  EXPECT_EQ(f.input(0)->node()->name(), "x");
  EXPECT_EQ(f.input(1)->node()->name(), "b");
  ops::FusedProgram p = program_of(f);
  EXPECT_EQ(p.to_string(), "mul(tanh(mul(add(in0, in1), 0.5)), in0)");
  EXPECT_FALSE(run_pass(pass, *g));
}

TEST(FuseElementwise, SharedIntermediateStaysOutside) {
  // e is read by two chains and is a graph output: it ends both groups.
  auto g = parse(R"(graph @g {
    %x = input() {dtype=f32, name="x", shape=[16]}
    %n = neg(%x)
    %e = exp(%n)
    %s = sigmoid(%e)
    %r = relu(%s)
    %l = log(%e)
    %q = square(%l)
    return {"r": %r, "q": %q, "e": %e}
  })");
  FuseElementwise pass;
  EXPECT_TRUE(run_pass(pass, *g));
  EXPECT_EQ(count_ops(*g, "fused_elementwise"), 3u);
  EXPECT_EQ(program_of(output_node(*g, "e")).to_string(), "exp(neg(in0))");
  EXPECT_EQ(program_of(output_node(*g, "r")).to_string(), "relu(sigmoid(in0))");
  EXPECT_EQ(output_node(*g, "r").input(0), output_node(*g, "q").input(0));
}

TEST(FuseElementwise, StopsAtShapeDtypeAndNonElementwiseOps) {
  auto g = parse(R"(graph @g {
    %x = input() {dtype=f32, name="x", shape=[4, 8]}
    %v = input() {dtype=f32, name="v", shape=[8]}
    %i = input() {dtype=i32, name="i", shape=[8]}
    %e = exp(%v)
    %a = add(%x, %e)
    %s = sum(%a) {axes=[1]}
    %r = relu(%s)
    %ii = add(%i, %i)
    %ij = neg(%ii)
    %k = gelu(%x) {approximate=false}
    %c = cast(%k) {dtype=f64}
    %d = sqrt(%c)
    return {"r": %r, "ij": %ij, "d": %d}
  })");
  FuseElementwise pass;
  EXPECT_FALSE(run_pass(pass, *g));  // every chain is one node long once these stop it
  EXPECT_EQ(count_ops(*g, "fused_elementwise"), 0u);
}

TEST(FuseElementwise, FusesGradientHelpersAndGelu) {
  auto g = parse(R"(graph @g {
    %dy = input() {dtype=bf16, name="dy", shape=[32]}
    %x = input() {dtype=bf16, name="x", shape=[32]}
    %g1 = gelu_grad(%dy, %x) {approximate=true}
    %g2 = relu_grad(%g1, %x)
    %g3 = gelu(%g2)
    return {"g": %g3}
  })");
  FuseElementwise pass;
  EXPECT_TRUE(run_pass(pass, *g));
  EXPECT_EQ(program_of(output_node(*g, "g")).to_string(),
            "gelu_erf(relu_grad(gelu_tanh_grad(in0, in1), in1))");
}

TEST(FuseElementwise, AllScalarOperandsBecomeImmediatesButAnInputRemains) {
  auto g = parse(R"(graph @g {
    %x = input() {dtype=f32, name="x", shape=[3]}
    %one = constant() {value=tensor<f32[1]>[1]}
    %two = constant() {value=tensor<f32[]>[2]}
    %a = sub(%one, %x)
    %b = pow(%a, %two)
    %c = div(%b, %two)
    return {"c": %c}
  })");
  FuseElementwise pass;
  EXPECT_TRUE(run_pass(pass, *g));
  const ir::Node& f = output_node(*g, "c");
  EXPECT_EQ(f.num_inputs(), 1);
  EXPECT_EQ(program_of(f).to_string(), "div(pow(sub(1, in0), 2), 2)");
}

}  // namespace
}  // namespace tern::passes
