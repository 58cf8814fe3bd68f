// pool_argmax: text IR in, structure out; the rewritten graph computes the same bits.
#include "tern/passes/pool_argmax.h"

#include <algorithm>
#include <cmath>
#include <regex>

#include "tern/passes/pass_eval_test_util.h"
#include "tern/passes/pass_test_util.h"
#include "tests/support/conv_pool_block.h"
#include "tests/support/random_tensor.h"

namespace tern::passes {
namespace {

using testing::count_ops;
using testing::output_node;
using testing::output_value;
using testing::parse;
using testing::run_pass;

// A conv -> pool -> relu block with its gradient (what autodiff writes for a CNN's first layer).
std::string block_text(const char* dtype) {
  return str_cat(R"(graph @g {
    %x = input() {dtype=)",
                 dtype, R"(, name="x", shape=[2, 9, 9, 1]}
    %f = input() {dtype=)",
                 dtype, R"(, name="f", shape=[3, 3, 1, 8]}
    %dy = input() {dtype=)",
                 dtype, R"(, name="dy", shape=[2, 3, 3, 8]}
    %c = conv2d(%x, %f)
    %p = max_pool2d(%c) {ksize=[2, 2], strides=[2, 2]}
    %r = relu(%p)
    %dp = relu_grad(%dy, %p)
    %dc = max_pool2d_grad(%c, %dp) {ksize=[2, 2], strides=[2, 2]}
    %df = conv2d_backprop_filter(%x, %dc) {filter_shape=[3, 3, 1, 8]}
    return {"r": %r, "dc": %dc, "df": %df}
  })");
}

TEST(PoolArgmax, PoolAndItsGradientBecomeTheArgmaxPair) {
  auto g = parse(block_text("f32"));
  PoolArgmax pass;
  EXPECT_TRUE(run_pass(pass, *g));
  EXPECT_EQ(count_ops(*g, "max_pool2d") + count_ops(*g, "max_pool2d_grad"), 0u);
  ASSERT_EQ(count_ops(*g, "max_pool2d_argmax"), 1u);
  const ir::Node& grad = output_node(*g, "dc");
  ASSERT_EQ(grad.op_name(), "max_pool2d_grad_argmax");
  EXPECT_EQ(grad.attrs().get_ints("input_shape"), (std::vector<int64_t>{2, 7, 7, 8}));
  EXPECT_EQ(grad.attrs().get_ints("ksize"), (std::vector<int64_t>{2, 2}));
  const ir::Node& pool = *grad.input(1)->node();
  EXPECT_EQ(pool.op_name(), "max_pool2d_argmax");
  EXPECT_EQ(grad.input(1), pool.output(1));
  EXPECT_EQ(output_node(*g, "r").input(0), pool.output(0));
  EXPECT_FALSE(run_pass(pass, *g));
}

TEST(PoolArgmax, LeavesOverlappingWindowsOtherPoolingsAndOtherDTypes) {
  auto g = parse(R"(graph @g {
    %x = input() {dtype=f32, name="x", shape=[1, 8, 8, 4]}
    %h = input() {dtype=f16, name="h", shape=[1, 8, 8, 4]}
    %dy = input() {dtype=f32, name="dy", shape=[1, 4, 4, 4]}
    %dh = input() {dtype=f16, name="dh", shape=[1, 4, 4, 4]}
    %p1 = max_pool2d(%x) {ksize=[3, 3], strides=[2, 2], padding="SAME"}
    %g1 = max_pool2d_grad(%x, %dy) {ksize=[3, 3], strides=[2, 2], padding="SAME"}
    %p2 = max_pool2d(%x) {ksize=[2, 2], strides=[2, 2]}
    %g2 = max_pool2d_grad(%x, %dy) {ksize=[2, 2], strides=[2, 2], padding="SAME"}
    %p3 = max_pool2d(%h) {ksize=[2, 2], strides=[2, 2]}
    %g3 = max_pool2d_grad(%h, %dh) {ksize=[2, 2], strides=[2, 2]}
    return {"p1": %p1, "g1": %g1, "p2": %p2, "g2": %g2, "p3": %p3, "g3": %g3}
  })");
  PoolArgmax pass;
  // Overlapping windows; a gradient of another pooling (SAME) of the same x; f16.
  EXPECT_FALSE(run_pass(pass, *g));
  EXPECT_EQ(count_ops(*g, "max_pool2d_argmax"), 0u);
}

// The training block's outputs before and after the pass, bit for bit, on the fast kernels and on
// ref (ties in the pooling windows included: x has runs of equal values).
TEST(PoolArgmax, SameBitsAsTheGraphItReplaces) {
  for (const char* dtype : {"f32", "bf16"}) {
    SCOPED_TRACE(dtype);
    auto plain = parse(block_text(dtype));
    auto g = parse(block_text(dtype));
    PoolArgmax pass;
    ASSERT_TRUE(run_pass(pass, *g));
    const DType d = parse_dtype(dtype);
    Tensor x(d, Shape{2, 9, 9, 1});
    for (int64_t i = 0; i < x.num_elements(); ++i) x.set(i, static_cast<double>((i / 3) % 4));
    runtime::Feeds feeds = {{"x", x},
                            {"f", tern::testing::random_tensor(d, Shape{3, 3, 1, 8}, 2)},
                            {"dy", tern::testing::random_tensor(d, Shape{2, 3, 3, 8}, 3)}};
    testing::expect_same_bits(*plain, *g, feeds);
  }
}

// The CNN's first layer as autodiff writes it for training (its input needs no gradient): the
// routed gradient is read only by the filter gradient and the bias gradient's sum.
const std::string kFirstLayer =
    tern::testing::conv_pool_block(2, 10, 1, 16, /*input_gradient=*/false);

// A device's kernel query as the CPU's one-channel kernels answer it: the pooled filter gradient
// of a one-channel layer only.
KernelQuery one_channel_kernels() {
  return [](const std::string& op, const ops::Attrs&, const std::vector<TensorType>& inputs,
            const std::vector<TensorType>&) {
    return op == "conv2d_backprop_filter_pooled" && inputs[0].shape.dim(3) == 1;
  };
}

TEST(PoolArgmax, FirstLayerFilterGradientReadsThePooledGradient) {
  auto g = parse(kFirstLayer);
  PoolArgmax pass(one_channel_kernels());
  EXPECT_TRUE(run_pass(pass, *g));
  EXPECT_EQ(count_ops(*g, "max_pool2d_grad_argmax") + count_ops(*g, "conv2d_backprop_filter"), 0u);
  const ir::Node& df = output_node(*g, "df");
  ASSERT_EQ(df.op_name(), "conv2d_backprop_filter_pooled");
  EXPECT_EQ(df.attrs().get_ints("pool_ksize"), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(df.attrs().get_ints("filter_shape"), (std::vector<int64_t>{3, 3, 1, 16}));
  const ir::Node& pool = *df.input(2)->node();
  EXPECT_EQ(pool.op_name(), "max_pool2d_argmax");
  EXPECT_EQ(df.input(1)->node()->op_name(), "relu_grad");  // the pooling's dy
  const ir::Node& db = output_node(*g, "db");
  ASSERT_EQ(db.op_name(), "sum");
  EXPECT_EQ(db.input(0), df.input(1));
  EXPECT_FALSE(run_pass(pass, *g));

  // Without a kernel query (no kernel for the pooled op), the routed gradient stays.
  auto plain = parse(kFirstLayer);
  PoolArgmax without;
  EXPECT_TRUE(run_pass(without, *plain));
  EXPECT_EQ(count_ops(*plain, "conv2d_backprop_filter_pooled"), 0u);
  EXPECT_EQ(count_ops(*plain, "max_pool2d_grad_argmax"), 1u);
}

// Bit for bit on ref (the fused op's ref routes dy as max_pool2d_grad_argmax does, then runs the
// filter gradient's ref; the bias sum adds the same values); within rounding on the fast kernels,
// which sum in another order.
// The bias sum's axes written negative, or all of them ([]): still sums over H and W.
TEST(PoolArgmax, FirstLayerSumAxesInOtherForms) {
  for (const char* axes : {"axes=[-4, -3, -2]", "axes=[]"}) {
    SCOPED_TRACE(axes);
    auto g = parse(std::regex_replace(kFirstLayer, std::regex("axes=\\[0, 1, 2\\]"), axes));
    PoolArgmax pass(one_channel_kernels());
    EXPECT_TRUE(run_pass(pass, *g));
    EXPECT_EQ(count_ops(*g, "max_pool2d_grad_argmax"), 0u);
    EXPECT_EQ(output_node(*g, "db").input(0), output_node(*g, "df").input(1));
  }
}

// The outputs of `g` and of `plain` on ref, expected bit for bit equal; returns plain's.
std::vector<Tensor> expect_same_bits_on_ref(const ir::Graph& plain, const ir::Graph& g,
                                            const runtime::Feeds& feeds) {
  runtime::EagerOptions ref;
  ref.kernel = "ref";
  std::vector<Tensor> want = runtime::run_graph_eager(plain, feeds, nullptr, ref);
  std::vector<Tensor> got = runtime::run_graph_eager(g, feeds, nullptr, ref);
  EXPECT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size() && i < want.size(); ++i) {
    EXPECT_TRUE(bitwise_equal(got[i], want[i])) << plain.outputs()[i].name;
  }
  return want;
}

TEST(PoolArgmax, FirstLayerGradientsAreTheGraphsItReplaces) {
  auto plain = parse(kFirstLayer);
  auto g = parse(kFirstLayer);
  PoolArgmax pass(one_channel_kernels());
  ASSERT_TRUE(run_pass(pass, *g));
  runtime::Feeds feeds = {{"x", tern::testing::random_tensor(DType::kF32, Shape{2, 10, 10, 1}, 1)},
                          {"f", tern::testing::random_tensor(DType::kF32, Shape{3, 3, 1, 16}, 2)},
                          {"b", tern::testing::random_tensor(DType::kF32, Shape{16}, 3)},
                          {"dy", tern::testing::random_tensor(DType::kF32, Shape{2, 4, 4, 16}, 4)}};
  const std::vector<Tensor> want = expect_same_bits_on_ref(*plain, *g, feeds);
  std::vector<Tensor> fast = runtime::run_graph_eager(*g, feeds, nullptr, runtime::EagerOptions{});
  for (size_t i = 0; i < fast.size(); ++i) {
    for (int64_t e = 0; e < want[i].num_elements(); ++e) {
      EXPECT_NEAR(fast[i].get(e), want[i].get(e), 1e-5 * (1 + std::abs(want[i].get(e))))
          << plain->outputs()[i].name << " element " << e;
    }
  }
}

// A filter gradient the device has no kernel for (3 input channels), a routed gradient with a
// reader it has none for (the input gradient of a layer that is not the first), or one that is a
// graph output: the routed gradient stays.
TEST(PoolArgmax, OtherLayersKeepTheRoutedGradient) {
  for (const char* change : {"channels", "input gradient", "output", "channel sum"}) {
    SCOPED_TRACE(change);
    std::string text = kFirstLayer;
    const std::string what = change;
    if (what == "channels") {
      text = std::regex_replace(text, std::regex("10, 10, 1\\]"), "10, 10, 3]");
      text = std::regex_replace(text, std::regex("3, 3, 1, 16\\]"), "3, 3, 3, 16]");
    } else if (what == "input gradient") {
      text = std::regex_replace(text, std::regex("return \\{"),
                                "%dx = conv2d_backprop_input(%dz, %f) {input_shape=[2, 10, 10, "
                                "1]}\n    return {\"dx\": %dx, ");
    } else if (what == "output") {
      text = std::regex_replace(text, std::regex("return \\{"), "return {\"dz\": %dz, ");
    } else {  // a sum that keeps H and W: not the same over dy
      text = std::regex_replace(text, std::regex("axes=\\[0, 1, 2\\]"), "axes=[3]");
    }
    auto g = parse(text);
    PoolArgmax pass(one_channel_kernels());
    EXPECT_TRUE(run_pass(pass, *g));  // the argmax pair still forms
    EXPECT_EQ(count_ops(*g, "conv2d_backprop_filter_pooled"), 0u);
    EXPECT_EQ(count_ops(*g, "max_pool2d_grad_argmax"), 1u);
  }
}

// A layer of several channels as autodiff writes it (its input gradient too), with an
// optimizer-like node ordered after the gradients that read the filter.
std::string inner_layer() {
  return tern::testing::conv_pool_block(2, 13, 4, 8, /*input_gradient=*/true,
                                        /*ordered_reader=*/true);
}

// A kernel query answering `yes` for the ops in it, recording what it was asked.
KernelQuery query_for(std::vector<std::string> yes, std::vector<std::string>* asked) {
  return [yes, asked](const std::string& op, const ops::Attrs& attrs,
                      const std::vector<TensorType>& inputs, const std::vector<TensorType>&) {
    asked->push_back(op);
    EXPECT_EQ(attrs.get_ints("pool_strides"), (std::vector<int64_t>{2, 2}));
    EXPECT_EQ(inputs.back(), (TensorType{DType::kU8, Shape{2, 5, 5, 8}}));  // the argmax
    return std::find(yes.begin(), yes.end(), op) != yes.end();
  };
}

TEST(PoolArgmax, InnerLayerGradientsReadThePooledGradientWhereKernelsAre) {
  std::vector<std::string> asked;
  auto g = parse(inner_layer());
  PoolArgmax pass(
      query_for({"conv2d_backprop_filter_pooled", "conv2d_backprop_input_pooled"}, &asked));
  EXPECT_TRUE(run_pass(pass, *g));
  // Both, then the two together (which this query refuses).
  EXPECT_EQ(asked,
            (std::vector<std::string>{"conv2d_backprop_filter_pooled",
                                      "conv2d_backprop_input_pooled", "conv2d_backprop_pooled"}));
  EXPECT_EQ(count_ops(*g, "max_pool2d_grad_argmax") + count_ops(*g, "conv2d_backprop_filter") +
                count_ops(*g, "conv2d_backprop_input"),
            0u);
  const ir::Node& df = output_node(*g, "df");
  const ir::Node& dx = output_node(*g, "dx");
  ASSERT_EQ(df.op_name(), "conv2d_backprop_filter_pooled");
  ASSERT_EQ(dx.op_name(), "conv2d_backprop_input_pooled");
  EXPECT_EQ(dx.attrs().get_ints("input_shape"), (std::vector<int64_t>{2, 13, 13, 4}));
  EXPECT_EQ(dx.input(0), df.input(1));  // the pooling's dy
  EXPECT_EQ(dx.input(1)->node()->attrs().get_string("name"), "f");
  EXPECT_EQ(dx.input(2), df.input(2));
  EXPECT_EQ(dx.input(2)->node()->op_name(), "max_pool2d_argmax");
  EXPECT_EQ(output_node(*g, "db").input(0), df.input(1));
  // The control edges moved to the replacements.
  const std::vector<ir::Node*>& after = output_node(*g, "k").control_inputs();
  EXPECT_EQ(after.size(), 2u);
  for (const ir::Node* n : after) EXPECT_TRUE(n == &df || n == &dx) << n->name();

  // Where the device lacks either kernel, the routed gradient stays for both.
  for (const char* missing : {"conv2d_backprop_filter_pooled", "conv2d_backprop_input_pooled"}) {
    SCOPED_TRACE(missing);
    std::vector<std::string> yes = {"conv2d_backprop_filter_pooled",
                                    "conv2d_backprop_input_pooled"};
    yes.erase(std::find(yes.begin(), yes.end(), missing));
    std::vector<std::string> seen;
    auto other = parse(inner_layer());
    PoolArgmax p(query_for(yes, &seen));
    EXPECT_TRUE(run_pass(p, *other));
    EXPECT_EQ(count_ops(*other, "max_pool2d_grad_argmax"), 1u);
    EXPECT_EQ(count_ops(*other, "conv2d_backprop_filter_pooled") +
                  count_ops(*other, "conv2d_backprop_input_pooled"),
              0u);
  }
}

// Where a kernel also takes both gradients together, one conv2d_backprop_pooled makes them.
TEST(PoolArgmax, InnerLayerGradientsJoinWhereAKernelTakesBoth) {
  std::vector<std::string> asked;
  auto g = parse(inner_layer());
  PoolArgmax pass(query_for(
      {"conv2d_backprop_filter_pooled", "conv2d_backprop_input_pooled", "conv2d_backprop_pooled"},
      &asked));
  EXPECT_TRUE(run_pass(pass, *g));
  EXPECT_EQ(asked.size(), 3u);
  EXPECT_EQ(count_ops(*g, "conv2d_backprop_filter_pooled") +
                count_ops(*g, "conv2d_backprop_input_pooled") +
                count_ops(*g, "max_pool2d_grad_argmax"),
            0u);
  const ir::Node& both = output_node(*g, "df");
  ASSERT_EQ(both.op_name(), "conv2d_backprop_pooled");
  EXPECT_EQ(&output_node(*g, "dx"), &both);
  EXPECT_EQ(output_value(*g, "dx"), both.output(0));
  EXPECT_EQ(output_value(*g, "df"), both.output(1));
  EXPECT_EQ(both.input(0)->node()->attrs().get_string("name"), "x");
  EXPECT_EQ(both.input(1), output_node(*g, "db").input(0));  // the pooling's dy
  EXPECT_EQ(both.input(2)->node()->attrs().get_string("name"), "f");
  EXPECT_EQ(both.input(3)->node()->op_name(), "max_pool2d_argmax");
  EXPECT_FALSE(both.attrs().has("filter_shape"));
  EXPECT_FALSE(both.attrs().has("input_shape"));
  EXPECT_EQ(both.attrs().get_ints("pool_ksize"), (std::vector<int64_t>{2, 2}));
  // The two gradients' control edges are the joint node's.
  const std::vector<ir::Node*>& after = output_node(*g, "k").control_inputs();
  ASSERT_EQ(after.size(), 1u);
  EXPECT_EQ(after[0], &both);
  EXPECT_FALSE(run_pass(pass, *g));

  // Where no kernel takes them together, the two pooled gradients stay apart.
  std::vector<std::string> seen;
  auto apart = parse(inner_layer());
  PoolArgmax p(query_for({"conv2d_backprop_filter_pooled", "conv2d_backprop_input_pooled"}, &seen));
  EXPECT_TRUE(run_pass(p, *apart));
  EXPECT_EQ(seen.back(), "conv2d_backprop_pooled");
  EXPECT_EQ(count_ops(*apart, "conv2d_backprop_pooled"), 0u);
  EXPECT_EQ(count_ops(*apart, "conv2d_backprop_input_pooled"), 1u);
}

// On ref the pooled ops compute the replaced graph's bits (each routes dy as
// max_pool2d_grad_argmax does, then runs the unpooled op's ref).
TEST(PoolArgmax, InnerLayerGradientsAreTheGraphsItReplaces) {
  for (const char* joint : {"", "conv2d_backprop_pooled"}) {
    SCOPED_TRACE(joint);
    auto plain = parse(inner_layer());
    auto g = parse(inner_layer());
    std::vector<std::string> asked;
    PoolArgmax pass(query_for(
        {"conv2d_backprop_filter_pooled", "conv2d_backprop_input_pooled", joint}, &asked));
    ASSERT_TRUE(run_pass(pass, *g));
    ASSERT_EQ(count_ops(*g, "conv2d_backprop_input_pooled") + count_ops(*g, joint), 1u);
    runtime::Feeds feeds = {
        {"x", tern::testing::random_tensor(DType::kF32, Shape{2, 13, 13, 4}, 1)},
        {"f", tern::testing::random_tensor(DType::kF32, Shape{3, 3, 4, 8}, 2)},
        {"b", tern::testing::random_tensor(DType::kF32, Shape{8}, 3)},
        {"dy", tern::testing::random_tensor(DType::kF32, Shape{2, 5, 5, 8}, 4)}};
    expect_same_bits_on_ref(*plain, *g, feeds);
  }
}

}  // namespace
}  // namespace tern::passes
