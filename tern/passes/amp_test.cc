// amp: text IR in, structure out; and optimized vs unoptimized numerics of an AMP graph.
#include "tern/passes/amp.h"

#include <cmath>

#include "tern/passes/pass_test_util.h"
#include "tern/runtime/executable.h"

namespace tern::passes {
namespace {

using testing::count_ops;
using testing::output_node;
using testing::parse;
using testing::run_pass;

// The producer of input `i` of `n`, skipping nothing.
const ir::Node& producer(const ir::Node& n, int i) {
  return *n.input(i)->node();
}

TEST(Amp, MatmulChainRunsInBf16WithCastsOnlyAtTheEdges) {
  auto g = parse(R"(graph @g {
    %x = input() {dtype=f32, name="x", shape=[8, 16]}
    %w1 = variable() {dtype=f32, name="w1", shape=[16, 32]}
    %b1 = variable() {dtype=f32, name="b1", shape=[32]}
    %w2 = variable() {dtype=f32, name="w2", shape=[32, 4]}
    %h = matmul(%x, %w1)
    %hb = add(%h, %b1)
    %r = relu(%hb)
    %y = matmul(%r, %w2)
    %p = softmax(%y)
    return {"p": %p}
  })");
  AutoMixedPrecision pass({DType::kBF16, {}});
  EXPECT_TRUE(run_pass(pass, *g));
  // Both matmuls, the bias add and the relu between them are bf16.
  for (const ir::Node* n : g->nodes()) {
    if (n->op_name() == "matmul" || n->op_name() == "add" || n->op_name() == "relu") {
      EXPECT_EQ(n->output()->dtype(), DType::kBF16) << n->name();
    }
  }
  // Casts: x, w1, b1, w2 down; the second matmul's result up. No cast between the bf16 ops.
  EXPECT_EQ(count_ops(*g, "cast"), 5u);
  const ir::Node& softmax = output_node(*g, "p");
  EXPECT_EQ(softmax.output()->dtype(), DType::kF32);
  const ir::Node& up = producer(softmax, 0);
  EXPECT_EQ(up.op_name(), "cast");
  EXPECT_EQ(producer(up, 0).op_name(), "matmul");
  const ir::Node& mm2 = producer(up, 0);
  EXPECT_EQ(producer(mm2, 0).op_name(), "relu");
}

TEST(Amp, FollowOpsOutsideAllowChainsStayF32) {
  // The moving-average style update reads a matmul result but feeds no allow-listed op: it stays
  // f32; the relu feeding only a reduction stays f32 too.
  auto g = parse(R"(graph @g {
    %x = input() {dtype=f32, name="x", shape=[8, 16]}
    %w = variable() {dtype=f32, name="w", shape=[16, 4]}
    %m = variable() {dtype=f32, name="m", shape=[8, 4]}
    %y = matmul(%x, %w)
    %k = constant() {value=tensor<f32[]>[0.9]}
    %scaled = mul(%m, %k)
    %upd = add(%scaled, %y)
    %r = relu(%y)
    %s = sum(%r) {axes=[], keepdims=false}
    return {"upd": %upd, "s": %s}
  })");
  AutoMixedPrecision pass({DType::kBF16, {}});
  EXPECT_TRUE(run_pass(pass, *g));
  EXPECT_EQ(output_node(*g, "upd").output()->dtype(), DType::kF32);
  EXPECT_EQ(output_node(*g, "s").output()->dtype(), DType::kF32);
  EXPECT_EQ(count_ops(*g, "relu"), 1u);
  EXPECT_EQ(g->nodes_of("relu")[0]->output()->dtype(), DType::kF32);
  EXPECT_EQ(g->nodes_of("matmul")[0]->output()->dtype(), DType::kBF16);
}

TEST(Amp, WeightGradientTakesSixteenBitInputsAndStaysF32AndF64GraphsAreUntouched) {
  auto g = parse(R"(graph @g {
    %x = input() {dtype=f32, name="x", shape=[2, 8, 8, 3]}
    %dy = input() {dtype=f32, name="dy", shape=[2, 8, 8, 4]}
    %f = variable() {dtype=f32, name="f", shape=[3, 3, 3, 4]}
    %y = conv2d(%x, %f) {padding="SAME"}
    %df = conv2d_backprop_filter(%x, %dy) {filter_shape=[3, 3, 3, 4], padding="SAME"}
    return {"y": %y, "df": %df}
  })");
  AutoMixedPrecision pass({DType::kBF16, {}});
  EXPECT_TRUE(run_pass(pass, *g));
  EXPECT_EQ(g->nodes_of("conv2d")[0]->output()->dtype(), DType::kBF16);
  const ir::Node& df = output_node(*g, "df");
  EXPECT_EQ(df.op_name(), "conv2d_backprop_filter");
  EXPECT_EQ(df.input(0)->dtype(), DType::kBF16);
  EXPECT_EQ(df.input(1)->dtype(), DType::kBF16);
  EXPECT_EQ(df.output()->dtype(), DType::kF32);  // no cast back up: f32 straight from the op
  EXPECT_EQ(df.attrs().get_string("dfilter_dtype"), "f32");
  // x is cast down once, shared by the forward conv and the weight gradient.
  EXPECT_EQ(df.input(0), g->nodes_of("conv2d")[0]->input(0));

  auto g64 = parse(R"(graph @g {
    %a = input() {dtype=f64, name="a", shape=[4, 4]}
    %c = matmul(%a, %a)
    return {"c": %c}
  })");
  EXPECT_FALSE(run_pass(pass, *g64));
  EXPECT_EQ(count_ops(*g64, "cast"), 0u);
}

TEST(Amp, SlowSixteenBitKernelsAreNotChosen) {
  auto g = parse(R"(graph @g {
    %x = input() {dtype=f32, name="x", shape=[8, 16]}
    %w = variable() {dtype=f32, name="w", shape=[16, 16]}
    %h = matmul(%x, %w)
    %r = relu(%h)
    %y = matmul(%r, %w)
    return {"y": %y}
  })");
  // relu has a fast f32 kernel but (in this pretend registry) no fast bf16 one.
  AutoMixedPrecision pass({DType::kBF16, [](std::string_view op, DType d) {
                             return op != "relu" || d == DType::kF32;
                           }});
  EXPECT_TRUE(run_pass(pass, *g));
  EXPECT_EQ(g->nodes_of("relu")[0]->output()->dtype(), DType::kF32);
  EXPECT_EQ(count_ops(*g, "matmul"), 2u);
  for (const ir::Node* m : g->nodes_of("matmul")) EXPECT_EQ(m->output()->dtype(), DType::kBF16);
}

TEST(Amp, F16WithoutFastKernelsConvertsOnlyWhenAsked) {
  const char* text = R"(graph @g {
    %x = input() {dtype=f32, name="x", shape=[8, 16]}
    %w = variable() {dtype=f32, name="w", shape=[16, 16]}
    %h = matmul(%x, %w)
    %r = relu(%h)
    %y = matmul(%r, %w)
    return {"y": %y}
  })";
  // A CPU-like registry: fast f32 everything, fast f16 elementwise, matmul f16 on ref only.
  auto fast = [](std::string_view op, DType d) { return d == DType::kF32 || op == "relu"; };
  auto g = parse(text);
  AutoMixedPrecision skip({DType::kF16, fast});
  EXPECT_FALSE(run_pass(skip, *g));
  for (const ir::Node* m : g->nodes_of("matmul")) EXPECT_EQ(m->output()->dtype(), DType::kF32);

  g = parse(text);
  AmpOptions o{DType::kF16, fast};
  o.convert_without_fast_kernel = true;  // what the runtime sets for mixed_float16
  AutoMixedPrecision pass(o);
  EXPECT_TRUE(run_pass(pass, *g));
  for (const ir::Node* m : g->nodes_of("matmul")) EXPECT_EQ(m->output()->dtype(), DType::kF16);
  EXPECT_EQ(g->nodes_of("relu")[0]->output()->dtype(), DType::kF16);
}

TEST(Amp, PolicyNames) {
  EXPECT_EQ(policy_compute_dtype("float32"), DType::kF32);
  EXPECT_EQ(policy_compute_dtype("mixed_bfloat16"), DType::kBF16);
  EXPECT_EQ(policy_compute_dtype("mixed_float16"), DType::kF16);
  EXPECT_THROW(policy_compute_dtype("bfloat16"), Error);
}

// Optimized (fusions, folding) and unoptimized executables of the same AMP graph agree.
TEST(Amp, OptimizedMatchesUnoptimized) {
  const char* text = R"(graph @g {
    %x = input() {dtype=f32, name="x", shape=[16, 32]}
    %w1 = variable() {dtype=f32, name="w1", shape=[32, 64]}
    %b1 = variable() {dtype=f32, name="b1", shape=[64]}
    %w2 = variable() {dtype=f32, name="w2", shape=[64, 8]}
    %h = matmul(%x, %w1)
    %hb = add(%h, %b1)
    %r = relu(%hb)
    %y = matmul(%r, %w2)
    %p = softmax(%y)
    return {"p": %p}
  })";
  runtime::VariableStore vars;
  Tensor w1(DType::kF32, Shape({32, 64})), b1(DType::kF32, Shape({64})),
      w2(DType::kF32, Shape({64, 8})), x(DType::kF32, Shape({16, 32}));
  auto fill = [](Tensor& t, double scale) {
    for (int64_t i = 0; i < t.num_elements(); ++i)
      t.data<float>()[i] = static_cast<float>(scale * std::sin(0.37 * static_cast<double>(i) + 1));
  };
  fill(w1, 0.2);
  fill(b1, 0.1);
  fill(w2, 0.3);
  fill(x, 1.0);
  vars.create("w1", w1);
  vars.create("b1", b1);
  vars.create("w2", w2);
  std::vector<Tensor> out[3];
  for (int mode = 0; mode < 3; ++mode) {
    auto g = parse(text);
    runtime::CompileOptions o;
    o.optimize = mode != 1;
    o.mixed_precision = mode == 2 ? DType::kF32 : DType::kBF16;
    auto exe = runtime::Executable::compile(*g, vars, o);
    out[mode] = exe->run({{"x", x}});
  }
  ASSERT_EQ(out[0][0].dtype(), DType::kF32);
  double max_opt = 0, max_f32 = 0;
  for (int64_t i = 0; i < out[0][0].num_elements(); ++i) {
    max_opt = std::max(max_opt, std::abs(out[0][0].get(i) - out[1][0].get(i)));
    max_f32 = std::max(max_f32, std::abs(out[0][0].get(i) - out[2][0].get(i)));
  }
  EXPECT_LT(max_opt, 1e-2);  // same bf16 math, different fusion and rounding points
  EXPECT_LT(max_f32, 5e-2);  // bf16 vs f32 probabilities
  EXPECT_GT(max_f32, 0.0);   // ... which do differ: the policy was applied
}

}  // namespace
}  // namespace tern::passes
