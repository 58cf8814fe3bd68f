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
  // The first matmul, the bias add and the relu are bf16; the second matmul reads bf16 and, as
  // only the f32 softmax reads its result, stores f32 itself (out_dtype = "f32").
  for (const ir::Node* n : g->nodes()) {
    if (n->op_name() == "add" || n->op_name() == "relu") {
      EXPECT_EQ(n->output()->dtype(), DType::kBF16) << n->name();
    }
  }
  // Casts: x, w1, b1, w2 down. None between the bf16 ops, none after the second matmul.
  EXPECT_EQ(count_ops(*g, "cast"), 4u);
  const ir::Node& softmax = output_node(*g, "p");
  EXPECT_EQ(softmax.output()->dtype(), DType::kF32);
  const ir::Node& mm2 = producer(softmax, 0);
  ASSERT_EQ(mm2.op_name(), "matmul");
  EXPECT_EQ(mm2.attrs().get_string("out_dtype"), "f32");
  EXPECT_EQ(mm2.input(0)->dtype(), DType::kBF16);
  EXPECT_EQ(producer(mm2, 0).op_name(), "relu");
  const ir::Node& mm1 = producer(producer(producer(mm2, 0), 0), 0);
  ASSERT_EQ(mm1.op_name(), "matmul");
  EXPECT_EQ(mm1.output()->dtype(), DType::kBF16);
  // mixed_float16 keeps the cast after the last matmul (loss scaling watches f16 values).
  auto f16 = parse(R"(graph @g {
    %x = input() {dtype=f32, name="x", shape=[8, 16]}
    %w = variable() {dtype=f32, name="w", shape=[16, 4]}
    %y = matmul(%x, %w)
    %p = softmax(%y)
    return {"p": %p}
  })");
  AutoMixedPrecision half({DType::kF16, {}});
  EXPECT_TRUE(run_pass(half, *f16));
  EXPECT_EQ(f16->nodes_of("matmul")[0]->output()->dtype(), DType::kF16);
  EXPECT_EQ(count_ops(*f16, "cast"), 3u);
}

// attention and its gradient run in bf16 on bf16 heads, but the softmax attention saves for its
// gradient stays f32 (no cast between the two) and so do the mask's words.
TEST(Amp, AttentionRunsInBf16AndItsSavedSoftmaxStaysF32) {
  auto g = parse(R"(graph @g {
    %q = input() {dtype=f32, name="q", shape=[2, 8, 2, 4]}
    %k = input() {dtype=f32, name="k", shape=[2, 8, 2, 4]}
    %v = input() {dtype=f32, name="v", shape=[2, 8, 2, 4]}
    %dy = input() {dtype=f32, name="dy", shape=[2, 8, 2, 4]}
    %o = input() {dtype=i64, name="o", shape=[]}
    %a = attention(%q, %k, %v, %o) {scale=0.5, rate=0.1}
    %g = attention_grad(%dy, %q, %k, %v, %a#1, %a#2) {scale=0.5, rate=0.1}
    return {"y": %a, "dq": %g, "dk": %g#1, "dv": %g#2}
  })");
  AutoMixedPrecision pass({DType::kBF16, {}});
  EXPECT_TRUE(run_pass(pass, *g));
  ASSERT_EQ(g->nodes_of("attention").size(), 1u);
  ASSERT_EQ(g->nodes_of("attention_grad").size(), 1u);
  const ir::Node& fwd = *g->nodes_of("attention")[0];
  const ir::Node& bwd = *g->nodes_of("attention_grad")[0];
  EXPECT_EQ(fwd.input(0)->dtype(), DType::kBF16);
  EXPECT_EQ(fwd.output(0)->dtype(), DType::kBF16);
  EXPECT_EQ(fwd.output(1)->dtype(), DType::kF32);
  EXPECT_EQ(bwd.input(4), fwd.output(1)) << "the saved softmax is read as it is, not cast";
  EXPECT_EQ(bwd.input(5), fwd.output(2));
  EXPECT_EQ(bwd.input(0)->dtype(), DType::kBF16);
  EXPECT_EQ(bwd.output(0)->dtype(), DType::kBF16);
  // Casts: q, k, v, dy down; y, dq, dk, dv up.
  EXPECT_EQ(count_ops(*g, "cast"), 8u);
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
  // Only f32 readers: the matmul stores f32 from bf16 inputs.
  const ir::Node& mm = *g->nodes_of("matmul")[0];
  EXPECT_EQ(mm.output()->dtype(), DType::kF32);
  EXPECT_EQ(mm.input(0)->dtype(), DType::kBF16);
  EXPECT_EQ(mm.attrs().get_string("out_dtype"), "f32");
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

TEST(Amp, BatchNormBetweenConvsRunsOnBf16ActivationsWithF32Statistics) {
  auto g = parse(R"(graph @g {
    %x = input() {dtype=f32, name="x", shape=[2, 8, 8, 3]}
    %f1 = variable() {dtype=f32, name="f1", shape=[3, 3, 3, 4]}
    %f2 = variable() {dtype=f32, name="f2", shape=[3, 3, 4, 4]}
    %gamma = variable() {dtype=f32, name="gamma", shape=[4]}
    %beta = variable() {dtype=f32, name="beta", shape=[4]}
    %c1 = conv2d(%x, %f1) {padding="SAME"}
    %bn = batch_norm_training(%c1, %gamma, %beta)
    %r = relu(%bn)
    %c2 = conv2d(%r, %f2) {padding="SAME"}
    %k = constant() {value=tensor<f32[]>[0.9]}
    %avg = mul(%bn#1, %k)
    return {"y": %c2, "avg": %avg, "var": %bn#2}
  })");
  AutoMixedPrecision pass({DType::kBF16, {}});
  EXPECT_TRUE(run_pass(pass, *g));
  // conv -> batch_norm_training -> relu -> conv with no cast in between.
  const ir::Node& c2 = *g->nodes_of("conv2d")[1]->input(0)->node();
  ASSERT_EQ(c2.op_name(), "relu");
  EXPECT_EQ(c2.output()->dtype(), DType::kBF16);
  const ir::Node& bn = producer(c2, 0);
  ASSERT_EQ(bn.op_name(), "batch_norm_training");
  EXPECT_EQ(producer(bn, 0).op_name(), "conv2d");
  EXPECT_EQ(bn.input(0)->dtype(), DType::kBF16);
  EXPECT_EQ(bn.output(0)->dtype(), DType::kBF16);
  // gamma and beta are read as f32 variables, mean and var come out f32 with no cast.
  EXPECT_EQ(producer(bn, 1).op_name(), "variable");
  EXPECT_EQ(producer(bn, 2).op_name(), "variable");
  EXPECT_EQ(bn.output(1)->dtype(), DType::kF32);
  EXPECT_EQ(bn.output(2)->dtype(), DType::kF32);
  const ir::Node& avg = output_node(*g, "avg");
  EXPECT_EQ(avg.op_name(), "mul");
  EXPECT_EQ(avg.output()->dtype(), DType::kF32);
  EXPECT_EQ(avg.input(0), bn.output(1));
  EXPECT_EQ(output_node(*g, "var").op_name(), "batch_norm_training");
  // Casts: x, f1, f2 down; the second conv's result up.
  EXPECT_EQ(count_ops(*g, "cast"), 4u);
}

TEST(Amp, BatchNormGradBetweenConvGradsRunsOnBf16Activations) {
  auto g = parse(R"(graph @g {
    %x = input() {dtype=f32, name="x", shape=[2, 8, 8, 3]}
    %dy = input() {dtype=f32, name="dy", shape=[2, 8, 8, 4]}
    %f1 = variable() {dtype=f32, name="f1", shape=[3, 3, 3, 4]}
    %f2 = variable() {dtype=f32, name="f2", shape=[3, 3, 4, 4]}
    %gamma = variable() {dtype=f32, name="gamma", shape=[4]}
    %mean = input() {dtype=f32, name="mean", shape=[4]}
    %var = input() {dtype=f32, name="var", shape=[4]}
    %c1 = conv2d(%x, %f1) {padding="SAME"}
    %dr = conv2d_backprop_input(%dy, %f2) {input_shape=[2, 8, 8, 4], padding="SAME"}
    %dz = relu_grad(%dr, %c1)
    %bg = batch_norm_grad(%dz, %c1, %gamma, %mean, %var)
    %dx = conv2d_backprop_input(%bg, %f1) {input_shape=[2, 8, 8, 3], padding="SAME"}
    %df = conv2d_backprop_filter(%x, %bg) {filter_shape=[3, 3, 3, 4], padding="SAME"}
    return {"dx": %dx, "df": %df, "dgamma": %bg#1, "dbeta": %bg#2}
  })");
  AutoMixedPrecision pass({DType::kBF16, {}});
  EXPECT_TRUE(run_pass(pass, *g));
  const ir::Node& df = output_node(*g, "df");
  ASSERT_EQ(df.op_name(), "conv2d_backprop_filter");
  const ir::Node& bg = producer(df, 1);
  ASSERT_EQ(bg.op_name(), "batch_norm_grad");
  // dy and x arrive in bf16 straight from relu_grad and the conv; dx leaves in bf16 to both
  // convolution gradients.
  EXPECT_EQ(producer(bg, 0).op_name(), "relu_grad");
  EXPECT_EQ(producer(bg, 0).output()->dtype(), DType::kBF16);
  EXPECT_EQ(producer(bg, 1).op_name(), "conv2d");
  EXPECT_EQ(bg.output(0)->dtype(), DType::kBF16);
  const ir::Node& dx = producer(output_node(*g, "dx"), 0);  // the cast up feeds the output
  ASSERT_EQ(dx.op_name(), "conv2d_backprop_input");
  EXPECT_EQ(&producer(dx, 0), &bg);
  // gamma, mean and var stay f32 (no cast), dgamma and dbeta are f32 graph outputs (no cast).
  for (int i = 2; i < 5; ++i) {
    EXPECT_EQ(bg.input(i)->dtype(), DType::kF32) << i;
    EXPECT_NE(producer(bg, i).op_name(), "cast") << i;
  }
  EXPECT_EQ(output_node(*g, "dgamma").op_name(), "batch_norm_grad");
  EXPECT_EQ(output_node(*g, "dbeta").op_name(), "batch_norm_grad");
  EXPECT_EQ(bg.output(1)->dtype(), DType::kF32);
  EXPECT_EQ(bg.output(2)->dtype(), DType::kF32);
  // Casts: x, dy, f1, f2 down; dx up (df is f32 from the op).
  EXPECT_EQ(count_ops(*g, "cast"), 5u);
}

// A batch_norm_grad with the relu folded in: its gate y is an activation like dy and x (cast
// down with them), gamma and the statistics stay f32.
TEST(Amp, FoldedReluGradientTakesItsGateInBf16) {
  auto g = parse(R"(graph @g {
    %x = input() {dtype=f32, name="x", shape=[2, 8, 8, 3]}
    %dy = input() {dtype=f32, name="dy", shape=[2, 8, 8, 4]}
    %f1 = variable() {dtype=f32, name="f1", shape=[3, 3, 3, 4]}
    %gamma = variable() {dtype=f32, name="gamma", shape=[4]}
    %beta = variable() {dtype=f32, name="beta", shape=[4]}
    %c1 = conv2d(%x, %f1) {padding="SAME"}
    %bn = batch_norm_training(%c1, %gamma, %beta) {activation="relu"}
    %bg = batch_norm_grad(%dy, %c1, %gamma, %bn#1, %bn#2, %bn) {activation="relu"}
    %df = conv2d_backprop_filter(%x, %bg) {filter_shape=[3, 3, 3, 4], padding="SAME"}
    return {"df": %df, "dgamma": %bg#1}
  })");
  AutoMixedPrecision pass({DType::kBF16, {}});
  EXPECT_TRUE(run_pass(pass, *g));
  const ir::Node& bg = producer(output_node(*g, "df"), 1);
  ASSERT_EQ(bg.op_name(), "batch_norm_grad");
  ASSERT_EQ(bg.num_inputs(), 6);
  for (int i : {0, 1, 5}) EXPECT_EQ(bg.input(i)->dtype(), DType::kBF16) << i;
  for (int i : {2, 3, 4}) EXPECT_EQ(bg.input(i)->dtype(), DType::kF32) << i;
  EXPECT_EQ(producer(bg, 5).op_name(), "batch_norm_training");  // no cast: y is bf16 already
  EXPECT_EQ(bg.output(1)->dtype(), DType::kF32);
}

// A dropout of a bf16 matmul's result that goes on in f32 (a residual add into a layer norm) stays
// f32 (the matmul's result cast up before it, as without the mask) although its
// mask feeds the gradient's dropout_apply inside a bf16 chain: an integer output carries no
// precision, so a converted reader of it does not pull the dropout in (that made W6-bf16's
// residual dropouts bf16 with a cast back up).
TEST(Amp, IntegerOutputsDoNotPullAProducerIntoBf16) {
  auto g = parse(R"(graph @g {
    %x = input() {dtype=f32, name="x", shape=[8, 16]}
    %r = input() {dtype=f32, name="r", shape=[8, 16]}
    %dy = input() {dtype=f32, name="dy", shape=[8, 16]}
    %off = input() {dtype=i64, name="off", shape=[]}
    %w = variable() {dtype=f32, name="w", shape=[16, 16]}
    %gamma = variable() {dtype=f32, name="gamma", shape=[16]}
    %beta = variable() {dtype=f32, name="beta", shape=[16]}
    %h = matmul(%x, %w)
    %d = dropout(%h, %off) {rate=0.1}
    %s = add(%d, %r)
    %ln = layer_norm(%s, %gamma, %beta)
    %g = matmul(%dy, %w)
    %da = dropout_apply(%g, %d#1) {rate=0.1}
    %dw = matmul(%da, %w)
    return {"ln": %ln, "dw": %dw}
  })");
  AutoMixedPrecision pass({DType::kBF16, {}});
  EXPECT_TRUE(run_pass(pass, *g));
  const ir::Node& ln = output_node(*g, "ln");
  ASSERT_EQ(ln.op_name(), "layer_norm");
  const ir::Node& add = producer(ln, 0);
  ASSERT_EQ(add.op_name(), "add");
  EXPECT_EQ(producer(add, 0).op_name(), "dropout");
  EXPECT_EQ(producer(add, 0).output()->dtype(), DType::kF32);
  // The gradient's chain runs in bf16, the mask read as it is.
  const ir::Node& dw = producer(output_node(*g, "dw"), 0);  // under the cast back up
  ASSERT_EQ(dw.op_name(), "matmul");
  const ir::Node& da = producer(dw, 0);
  ASSERT_EQ(da.op_name(), "dropout_apply");
  EXPECT_EQ(da.output()->dtype(), DType::kBF16);
  EXPECT_EQ(da.input(1)->dtype(), DType::kI32);
}

// A bias gradient (sum over rows) of a bf16 value that a bf16 op also reads: the sum reads the
// bf16 value and returns f32 (out_dtype) instead of reading a cast back up.
TEST(Amp, SumOfACastUpReadsTheBf16Value) {
  auto g = parse(R"(graph @g {
    %x = input() {dtype=f32, name="x", shape=[8, 16]}
    %w1 = variable() {dtype=f32, name="w1", shape=[16, 32]}
    %w2 = variable() {dtype=f32, name="w2", shape=[32, 4]}
    %h = matmul(%x, %w1)
    %r = relu(%h)
    %y = matmul(%r, %w2)
    %db = sum(%h) {axes=[0]}
    return {"y": %y, "db": %db}
  })");
  AutoMixedPrecision pass({DType::kBF16, {}});
  EXPECT_TRUE(run_pass(pass, *g));
  const ir::Node& db = output_node(*g, "db");
  ASSERT_EQ(db.op_name(), "sum");
  EXPECT_EQ(db.attrs().get_string("out_dtype"), "f32");
  EXPECT_EQ(db.output()->dtype(), DType::kF32);
  EXPECT_EQ(db.input(0)->dtype(), DType::kBF16);
  EXPECT_EQ(producer(db, 0).op_name(), "matmul");  // no cast in between
  // Casts: x, w1, w2 down and y back up; none for the sum.
  EXPECT_EQ(count_ops(*g, "cast"), 4u);
}

TEST(Amp, BatchNormOutsideAllowChainsStaysF32) {
  auto g = parse(R"(graph @g {
    %x = input() {dtype=f32, name="x", shape=[8, 4]}
    %gamma = variable() {dtype=f32, name="gamma", shape=[4]}
    %beta = variable() {dtype=f32, name="beta", shape=[4]}
    %bn = batch_norm_training(%x, %gamma, %beta)
    %r = relu(%bn)
    return {"r": %r}
  })");
  AutoMixedPrecision pass({DType::kBF16, {}});
  EXPECT_FALSE(run_pass(pass, *g));
  EXPECT_EQ(count_ops(*g, "cast"), 0u);
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
  // Both run on bf16 inputs; the first (read by the f32 relu) stores f32, the second (a graph
  // output, through its cast) bf16.
  for (const ir::Node* m : g->nodes_of("matmul")) {
    EXPECT_EQ(m->input(0)->dtype(), DType::kBF16);
    EXPECT_EQ(m->output()->dtype(),
              m->attrs().get_string("out_dtype") == "f32" ? DType::kF32 : DType::kBF16);
  }
  EXPECT_EQ(count_ops(*g, "cast"), 4u);  // x, w and the f32 relu's result down; y up
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

const ir::Node* only_node(const ir::Graph& g, std::string_view op) {
  const ir::Node* found = nullptr;
  for (const ir::Node* n : g.nodes()) {
    if (n->op_name() != op) continue;
    EXPECT_EQ(found, nullptr) << "two " << op << " nodes";
    found = n;
  }
  return found;
}

// Weights the optimizer updates are read through the store's bf16 copies (also through a
// reshape), and the update writes those copies; a weight another op writes (assign) keeps its
// cast, as without variable_copies.
TEST(Amp, UpdatedWeightsReadTheStoresCopyTheUpdateWrites) {
  const char* text = R"(graph @g {
    %x = input() {dtype=f32, name="x", shape=[8, 16]}
    %lr = input() {dtype=f32, name="lr", shape=[]}
    %w1 = variable() {dtype=f32, name="w1", shape=[16, 32]}
    %w2 = variable() {dtype=f32, name="w2", shape=[2, 16, 4]}
    %w3 = variable() {dtype=f32, name="w3", shape=[4, 4]}
    %g1 = input() {dtype=f32, name="g1", shape=[16, 32]}
    %g2 = input() {dtype=f32, name="g2", shape=[2, 16, 4]}
    %v3 = input() {dtype=f32, name="v3", shape=[4, 4]}
    %h = matmul(%x, %w1)
    %w2r = reshape(%w2) {shape=[32, 4]}
    %y = matmul(%h, %w2r)
    %z = matmul(%y, %w3)
    %u = sgd_update(%lr, %w1, %w2, %g1, %g2) after(%h, %y) {num_params=2, momentum=0.0}
    %a = assign(%w3, %v3) after(%z)
    return {"z": %z}
  })";
  auto plain = parse(text);
  AutoMixedPrecision casting({DType::kBF16, {}});
  EXPECT_TRUE(run_pass(casting, *plain));
  EXPECT_EQ(count_ops(*plain, "variable_copy"), 0u);

  auto g = parse(text);
  AmpOptions o{DType::kBF16, {}};
  o.variable_copies = true;
  AutoMixedPrecision pass(o);
  EXPECT_TRUE(run_pass(pass, *g));
  EXPECT_EQ(count_ops(*g, "variable_copy"), 2u);
  EXPECT_EQ(count_ops(*g, "cast"), count_ops(*plain, "cast") - 2);
  const ir::Node* update = only_node(*g, "sgd_update");
  ASSERT_NE(update, nullptr);
  EXPECT_EQ(update->attrs().get_ints("copies"), (std::vector<int64_t>{0, 1}));
  ASSERT_EQ(update->num_inputs(), 7);
  for (int j = 0; j < 2; ++j) {
    const ir::Node& copy = producer(*update, 5 + j);
    EXPECT_EQ(copy.op_name(), "variable_copy");
    EXPECT_EQ(copy.attrs().get_string("name"), j == 0 ? "w1" : "w2");
    EXPECT_EQ(copy.output()->dtype(), DType::kBF16);
  }
  // The matmuls read the copies (the second through a reshape of it) ...
  for (const ir::Node* n : g->nodes()) {
    if (n->op_name() != "matmul") continue;
    const ir::Node& w = producer(*n, 1);
    if (w.op_name() == "reshape") {
      EXPECT_EQ(producer(w, 0).op_name(), "variable_copy");
    } else if (w.op_name() == "cast") {  // ... but the assigned w3 is still cast.
      EXPECT_EQ(producer(w, 0).attrs().get_string("name"), "w3");
    } else {
      EXPECT_EQ(w.op_name(), "variable_copy") << n->name();
      EXPECT_EQ(w.attrs().get_string("name"), "w1");
    }
  }
}

// A graph that only reads its weights (evaluation) reads the copies as they are (the store casts
// them again whenever the weight changed); without variable_copies it casts.
TEST(Amp, ReadOnlyWeightsReadTheStoresCopy) {
  const char* text = R"(graph @g {
    %x = input() {dtype=f32, name="x", shape=[8, 16]}
    %w = variable() {dtype=f32, name="w", shape=[16, 4]}
    %y = matmul(%x, %w)
    return {"y": %y}
  })";
  auto g = parse(text);
  AmpOptions o{DType::kBF16, {}};
  o.variable_copies = true;
  AutoMixedPrecision pass(o);
  EXPECT_TRUE(run_pass(pass, *g));
  const ir::Node* copy = only_node(*g, "variable_copy");
  ASSERT_NE(copy, nullptr);
  EXPECT_EQ(copy->attrs().get_string("name"), "w");
  EXPECT_EQ(copy->output()->uses().size(), 1u);
  EXPECT_EQ(copy->output()->uses()[0].node->op_name(), "matmul");
  const ir::Node* w = only_node(*g, "variable");  // nothing reads the f32 weight any more
  ASSERT_NE(w, nullptr);
  EXPECT_TRUE(w->output()->uses().empty());
}

// A reader of a weight's cast that runs after the update must see the weight as it was: the cast
// stays (the copy would already hold the updated weight).
TEST(Amp, CastReadAfterTheUpdateStays) {
  auto g = parse(R"(graph @g {
    %x = input() {dtype=bf16, name="x", shape=[8, 16]}
    %lr = input() {dtype=f32, name="lr", shape=[]}
    %w = variable() {dtype=f32, name="w", shape=[16, 4]}
    %g = input() {dtype=f32, name="g", shape=[16, 4]}
    %c = cast(%w) {dtype=bf16}
    %u = sgd_update(%lr, %w, %g) after(%c) {num_params=1, momentum=0.0}
    %y = matmul(%x, %c) after(%u)
    return {"y": %y}
  })");
  AmpOptions o{DType::kBF16, {}};
  o.variable_copies = true;
  AutoMixedPrecision pass(o);
  run_pass(pass, *g);
  EXPECT_EQ(count_ops(*g, "variable_copy"), 0u);
  EXPECT_EQ(count_ops(*g, "cast"), 1u);
  EXPECT_TRUE(only_node(*g, "sgd_update")->attrs().get_ints("copies").empty());
}

// Attention's softmax between two matmuls runs in bf16 (oneDNN computes it in f32 and rounds the
// result), as Keras' MultiHeadAttention under mixed_bfloat16 and PyTorch's CPU autocast run it;
// a classifier's softmax, read by f32 code, stays f32.
TEST(Amp, SoftmaxBetweenMatmulsRunsInBf16) {
  auto g = parse(R"(graph @g {
    %q = input() {dtype=f32, name="q", shape=[4, 8, 16]}
    %k = input() {dtype=f32, name="k", shape=[4, 16, 8]}
    %v = input() {dtype=f32, name="v", shape=[4, 8, 16]}
    %w = variable() {dtype=f32, name="w", shape=[16, 3]}
    %s = matmul(%q, %k)
    %p = softmax(%s)
    %o = matmul(%p, %v)
    %flat = reshape(%o) {shape=[32, 16]}
    %logits = matmul(%flat, %w)
    %probs = softmax(%logits)
    return {"probs": %probs}
  })");
  AutoMixedPrecision pass({DType::kBF16, {}});
  EXPECT_TRUE(run_pass(pass, *g));
  const ir::Node& probs = output_node(*g, "probs");
  EXPECT_EQ(probs.op_name(), "softmax");
  EXPECT_EQ(probs.output()->dtype(), DType::kF32);
  int bf16_softmax = 0;
  for (const ir::Node* n : g->nodes()) {
    if (n->op_name() != "softmax" || n == &probs) continue;
    ++bf16_softmax;
    EXPECT_EQ(n->output()->dtype(), DType::kBF16);
    EXPECT_EQ(producer(*n, 0).op_name(), "matmul");  // no cast on either side
    ASSERT_EQ(n->output()->uses().size(), 1u);
    EXPECT_EQ(n->output()->uses()[0].node->op_name(), "matmul");
  }
  EXPECT_EQ(bf16_softmax, 1);
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
  Tensor w1 = testing::sine_tensor(Shape({32, 64}), 0.2),
         b1 = testing::sine_tensor(Shape({64}), 0.1),
         w2 = testing::sine_tensor(Shape({64, 8}), 0.3),
         x = testing::sine_tensor(Shape({16, 32}), 1.0);
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
