// fuse_elementwise: text IR in, structure out.
#include "tern/passes/fuse_elementwise.h"

#include "tern/ops/fused_program.h"
#include "tern/passes/pass_test_util.h"
#include "tern/runtime/eager.h"
#include "tests/support/random_tensor.h"

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

TEST(FuseColumnSum, BiasGradientJoinsItsActivationGradient) {
  auto g = parse(R"(graph @g {
    %dy = input() {dtype=f32, name="dy", shape=[16, 8]}
    %x = input() {dtype=f32, name="x", shape=[16, 8]}
    %w = input() {dtype=f32, name="w", shape=[4, 8]}
    %d = gelu_grad(%dy, %x) {approximate=false}
    %db = sum(%d) {axes=[0]}
    %kept = sum(%d) {axes=[0], keepdims=true}
    %dx = matmul(%d, %w) {transpose_b=true}
    return {"db": %db, "kept": %kept, "dx": %dx}
  })");
  FuseColumnSum pass;
  EXPECT_TRUE(run_pass(pass, *g));
  // The first sum joins gelu_grad; the second sums the fused node's first output.
  EXPECT_EQ(count_ops(*g, "sum"), 1u);
  EXPECT_EQ(count_ops(*g, "gelu_grad"), 0u);
  const ir::Node& f = output_node(*g, "db");
  ASSERT_EQ(f.op_name(), "fused_elementwise");
  EXPECT_TRUE(f.attrs().get_bool("column_sum"));
  EXPECT_EQ(f.attrs().get_string("sum_dtype"), "");
  EXPECT_EQ(program_of(f).to_string(), "gelu_erf_grad(in0, in1)");
  EXPECT_EQ(f.output(1)->type().to_string(), "f32[8]");
  // The matmul reads the fused node's first output.
  EXPECT_EQ(output_node(*g, "dx").input(0), f.output(0));
  EXPECT_FALSE(run_pass(pass, *g));
}

TEST(FuseColumnSum, JoinsAFusedProgramButNotA16BitValue) {
  // A 3-D value summed over its two leading axes (one named negatively); the same in bf16 stays.
  auto g = parse(R"(graph @g {
    %a = input() {dtype=f32, name="a", shape=[2, 5, 8]}
    %b = input() {dtype=f32, name="b", shape=[8]}
    %t = add(%a, %b)
    %r = relu(%t)
    %s = sum(%r) {axes=[0, -2]}
    %a16 = input() {dtype=bf16, name="a16", shape=[2, 5, 8]}
    %r16 = relu(%a16)
    %s16 = sum(%r16) {axes=[0, 1], out_dtype="f32"}
    return {"s": %s, "r": %r, "s16": %s16}
  })");
  FuseElementwise fuse;
  EXPECT_TRUE(run_pass(fuse, *g));
  FuseColumnSum pass;
  EXPECT_TRUE(run_pass(pass, *g));
  const ir::Node& f = output_node(*g, "s");
  EXPECT_EQ(&f, &output_node(*g, "r"));
  EXPECT_EQ(f.attrs().get_string("sum_dtype"), "");
  EXPECT_EQ(program_of(f).to_string(), "relu(add(in0, in1))");
  EXPECT_EQ(f.output(1)->type().to_string(), "f32[8]");
  EXPECT_EQ(output_node(*g, "s16").op_name(), "sum");
}

TEST(FuseColumnSum, LooksThroughAReshapeKeepingTheLastDim) {
  // A dense layer's [batch, steps, N] gradient flattened to rows for its matmul and bias sum.
  auto g = parse(R"(graph @g {
    %dy = input() {dtype=f32, name="dy", shape=[2, 3, 8]}
    %x = input() {dtype=f32, name="x", shape=[2, 3, 8]}
    %d = gelu_grad(%dy, %x) {approximate=false}
    %rows = reshape(%d) {shape=[6, 8]}
    %db = sum(%rows) {axes=[0], keepdims=true}
    %other = reshape(%d) {shape=[3, 16]}
    %nope = sum(%other) {axes=[0]}
    return {"db": %db, "rows": %rows, "nope": %nope}
  })");
  FuseColumnSum pass;
  EXPECT_TRUE(run_pass(pass, *g));
  EXPECT_EQ(count_ops(*g, "sum"), 1u);  // a reshape to another last dim mixes the columns
  const ir::Node& keep = output_node(*g, "db");
  ASSERT_EQ(keep.op_name(), "reshape");  // keepdims: [8] -> [1, 8]
  const ir::Node& f = *keep.input(0)->node();
  EXPECT_EQ(f.op_name(), "fused_elementwise");
  EXPECT_EQ(keep.output()->type().to_string(), "f32[1, 8]");
  EXPECT_EQ(output_node(*g, "rows").input(0), f.output(0));
}

TEST(FuseColumnSum, OtherSumsStay) {
  auto g = parse(R"(graph @g {
    %x = input() {dtype=f32, name="x", shape=[2, 3, 4]}
    %w = input() {dtype=f32, name="w", shape=[4, 4]}
    %e = exp(%x)
    %rows = sum(%e) {axes=[2]}
    %t = tanh(%x)
    %last = sum(%t) {axes=[1, 2]}
    %n = neg(%x)
    %first = sum(%n) {axes=[0]}
    %m = matmul(%x, %w)
    %of_matmul = sum(%m) {axes=[0, 1]}
    return {"rows": %rows, "last": %last, "first": %first, "of_matmul": %of_matmul}
  })");
  FuseColumnSum pass;
  EXPECT_FALSE(run_pass(pass, *g));
  EXPECT_EQ(count_ops(*g, "sum"), 4u);
}

// A q / k projection's bias gradient: attention_grad's dq (dk), flattened to rows and summed.
// Both sums come from one attention_grad with bias_sums (reshaped to the sums' shapes; dv's
// stays unread); the gradients and sums are what the graph computed, on the fast kernels and ref.
constexpr const char* kAttentionText = R"(graph @g {
  %dout = input() {dtype=f32, name="dout", shape=[2, 16, 2, 64]}
  %q = input() {dtype=f32, name="q", shape=[2, 16, 2, 64]}
  %k = input() {dtype=f32, name="k", shape=[2, 16, 2, 64]}
  %v = input() {dtype=f32, name="v", shape=[2, 16, 2, 64]}
  %probs = input() {dtype=f32, name="probs", shape=[2, 2, 16, 16]}
  %mask = input() {dtype=i32, name="mask", shape=[0]}
  %g = attention_grad(%dout, %q, %k, %v, %probs, %mask) {scale=0.125}
  %dq = reshape(%g) {shape=[32, 128]}
  %sq = sum(%dq) {axes=[0], keepdims=true}
  %dk = reshape(%g#1) {shape=[32, 128]}
  %sk = sum(%dk) {axes=[0]}
  %e = exp(%g#2)
  return {"sq": %sq, "sk": %sk, "dq": %dq, "e": %e}
})";

TEST(FuseColumnSum, AttentionProjectionBiasSumsJoinTheAttentionGradient) {
  auto plain = parse(kAttentionText);
  auto g = parse(kAttentionText);
  FuseColumnSum pass;
  EXPECT_TRUE(run_pass(pass, *g));
  EXPECT_EQ(count_ops(*g, "sum"), 0u);
  ASSERT_EQ(count_ops(*g, "attention_grad"), 1u);
  const ir::Node& att = *g->nodes_of("attention_grad")[0];
  EXPECT_TRUE(att.attrs().get_bool("bias_sums"));
  const ir::Node& sq = output_node(*g, "sq");
  ASSERT_EQ(sq.op_name(), "reshape");
  EXPECT_EQ(sq.input(0), att.output(3));
  EXPECT_EQ(sq.output()->shape(), (Shape{1, 128}));
  EXPECT_EQ(output_node(*g, "sk").input(0), att.output(4));
  EXPECT_EQ(output_node(*g, "e").input(0), att.output(2));
  EXPECT_FALSE(run_pass(pass, *g));

  runtime::Feeds feeds;
  uint64_t seed = 30;
  for (const char* name : {"dout", "q", "k", "v"}) {
    feeds.emplace_back(name,
                       tern::testing::random_tensor(DType::kF32, Shape{2, 16, 2, 64}, seed++));
  }
  feeds.emplace_back("probs",
                     tern::testing::random_tensor(DType::kF32, Shape{2, 2, 16, 16}, seed++, 0, 1));
  feeds.emplace_back("mask", Tensor(DType::kI32, Shape{0}));
  runtime::EagerOptions fast, ref;
  ref.kernel = "ref";
  for (const runtime::EagerOptions& options : {fast, ref}) {
    SCOPED_TRACE(str_cat("kernels '", options.kernel, "'"));
    std::vector<Tensor> want = runtime::run_graph_eager(*plain, feeds, nullptr, options);
    std::vector<Tensor> got = runtime::run_graph_eager(*g, feeds, nullptr, options);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) {
      ASSERT_EQ(got[i].shape(), want[i].shape());
      for (int64_t e = 0; e < got[i].num_elements(); ++e)
        ASSERT_NEAR(got[i].get(e), want[i].get(e), 1e-5 * (1 + std::abs(want[i].get(e))))
            << plain->outputs()[i].name << " " << e;
    }
  }
}

// bf16 heads (mixed precision): the bias gradient is the bf16 gradient's sum read into f32
// (out_dtype "f32"), which the attention gradient's f32 sums replace; a bf16 sum stays.
TEST(FuseColumnSum, Bf16AttentionGradientsSumIntoF32) {
  auto g = parse(R"(graph @g {
    %dout = input() {dtype=bf16, name="dout", shape=[2, 16, 2, 64]}
    %q = input() {dtype=bf16, name="q", shape=[2, 16, 2, 64]}
    %k = input() {dtype=bf16, name="k", shape=[2, 16, 2, 64]}
    %v = input() {dtype=bf16, name="v", shape=[2, 16, 2, 64]}
    %probs = input() {dtype=f32, name="probs", shape=[2, 2, 16, 16]}
    %mask = input() {dtype=i32, name="mask", shape=[0]}
    %g = attention_grad(%dout, %q, %k, %v, %probs, %mask) {scale=0.125}
    %dv = reshape(%g#2) {shape=[32, 128]}
    %sv = sum(%dv) {axes=[0], keepdims=true, out_dtype="f32"}
    %dq = reshape(%g) {shape=[32, 128]}
    %sq16 = sum(%dq) {axes=[0]}
    return {"sv": %sv, "sq16": %sq16}
  })");
  FuseColumnSum pass;
  EXPECT_TRUE(run_pass(pass, *g));
  const ir::Node& att = *g->nodes_of("attention_grad")[0];
  EXPECT_TRUE(att.attrs().get_bool("bias_sums"));
  EXPECT_EQ(output_node(*g, "sv").input(0), att.output(5));
  EXPECT_EQ(output_node(*g, "sq16").op_name(), "sum");
}

}  // namespace
}  // namespace tern::passes
