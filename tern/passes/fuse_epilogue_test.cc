// fuse_epilogue: text IR in, structure out.
#include "tern/passes/fuse_epilogue.h"

#include "tern/passes/pass_test_util.h"

namespace tern::passes {
namespace {

using testing::count_ops;
using testing::output_node;
using testing::parse;
using testing::run_pass;

TEST(FuseEpilogue, MatmulBiasReluBecomesOneNode) {
  auto g = parse(R"(graph @g {
    %x = input() {dtype=f32, name="x", shape=[8, 16]}
    %w = variable() {dtype=f32, name="w", shape=[16, 4]}
    %b = variable() {dtype=f32, name="b", shape=[4]}
    %mm = matmul(%x, %w)
    %z = add(%b, %mm)
    %y = relu(%z)
    return {"y": %y}
  })");
  FuseEpilogue pass;
  EXPECT_TRUE(run_pass(pass, *g));
  EXPECT_EQ(count_ops(*g, "matmul") + count_ops(*g, "add") + count_ops(*g, "relu"), 0u);
  ASSERT_EQ(count_ops(*g, "fused_matmul"), 1u);
  const ir::Node& f = output_node(*g, "y");
  EXPECT_EQ(f.op_name(), "fused_matmul");
  EXPECT_EQ(f.attrs().get_string("activation"), "relu");
  EXPECT_TRUE(f.attrs().get_bool("has_bias"));
  EXPECT_FALSE(f.attrs().get_bool("has_residual"));
  EXPECT_EQ(f.input(2)->node()->name(), "b");
  EXPECT_FALSE(run_pass(pass, *g));
}

// Inference: conv2d -> bias -> max_pool2d -> relu (simplify's order) is one fused_conv2d with
// the pool folded in and relu as its activation; the pooling's attributes carry over.
TEST(FuseEpilogue, ConvBiasPoolReluBecomesOneNode) {
  auto g = parse(R"(graph @g {
    %x = input() {dtype=f32, name="x", shape=[4, 28, 28, 1]}
    %w = variable() {dtype=f32, name="w", shape=[3, 3, 1, 32]}
    %b = variable() {dtype=f32, name="b", shape=[32]}
    %c = conv2d(%x, %w)
    %z = add(%c, %b)
    %p = max_pool2d(%z) {ksize=[2, 2], strides=[2, 2]}
    %y = relu(%p)
    return {"y": %y}
  })");
  FuseEpilogue pass;
  EXPECT_TRUE(run_pass(pass, *g));
  EXPECT_EQ(g->num_nodes(), 4u);
  const ir::Node& f = output_node(*g, "y");
  ASSERT_EQ(f.op_name(), "fused_conv2d");
  EXPECT_EQ(f.attrs().get_string("pool"), "max");
  EXPECT_EQ(f.attrs().get_ints("pool_ksize"), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(f.attrs().get_ints("pool_strides"), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(f.attrs().get_string("activation"), "relu");
  EXPECT_TRUE(f.attrs().get_bool("has_bias"));
  EXPECT_EQ(f.output()->shape(), Shape({4, 13, 13, 32}));
  EXPECT_FALSE(run_pass(pass, *g));
}

// Training: the convolution's output is also read by the pooling's gradient, so the pooling stays
// apart; a residual add also keeps it apart (pool takes no residual).
TEST(FuseEpilogue, PoolStaysApartWhenTheConvolutionHasAnotherReader) {
  auto g = parse(R"(graph @g {
    %x = input() {dtype=f32, name="x", shape=[4, 8, 8, 3]}
    %w = variable() {dtype=f32, name="w", shape=[3, 3, 3, 16]}
    %c = conv2d(%x, %w) {padding="SAME"}
    %r = relu(%c)
    %p = max_pool2d(%r) {ksize=[2, 2], strides=[2, 2]}
    %dy = input() {dtype=f32, name="dy", shape=[4, 4, 4, 16]}
    %g = max_pool2d_grad(%r, %dy) {ksize=[2, 2], strides=[2, 2]}
    %s = input() {dtype=f32, name="s", shape=[4, 8, 8, 16]}
    %c2 = conv2d(%x, %w) {padding="SAME"}
    %a = add(%c2, %s)
    %p2 = max_pool2d(%a) {ksize=[2, 2], strides=[2, 2]}
    return {"p": %p, "g": %g, "p2": %p2}
  })");
  FuseEpilogue pass;
  EXPECT_TRUE(run_pass(pass, *g));
  EXPECT_EQ(count_ops(*g, "max_pool2d"), 2u);
  EXPECT_EQ(output_node(*g, "p").op_name(), "max_pool2d");
  EXPECT_EQ(output_node(*g, "p2").op_name(), "max_pool2d");
  EXPECT_EQ(count_ops(*g, "fused_conv2d"), 2u);
}

// Training's one-channel first layer (pass pool_argmax made its pooling the argmax pair): where
// the kernel query takes the fused node (as the CPU's one-channel kernel does), conv + bias + the
// pooling become fused_conv2d with pool = "max_argmax", both of the pooling's outputs its own;
// without a query, or where it has no kernel (three input channels), the pooling stays.
TEST(FuseEpilogue, OneChannelLayerJoinsItsArgmaxPooling) {
  auto text = [](int64_t channels) {
    return str_cat(R"(graph @g {
    %x = input() {dtype=f32, name="x", shape=[4, 28, 28, )",
                   channels, R"(]}
    %w = variable() {dtype=f32, name="w", shape=[3, 3, )",
                   channels, R"(, 32]}
    %b = variable() {dtype=f32, name="b", shape=[32]}
    %c = conv2d(%x, %w)
    %z = add(%c, %b)
    %p = max_pool2d_argmax(%z) {ksize=[2, 2], strides=[2, 2]}
    %y = relu(%p)
    %dy = input() {dtype=f32, name="dy", shape=[4, 13, 13, 32]}
    %g = max_pool2d_grad_argmax(%dy, %p#1) {ksize=[2, 2], strides=[2, 2], input_shape=[4, 26, 26, 32]}
    return {"y": %y, "g": %g}
  })");
  };
  KernelQuery one_channel = [](const std::string& op, const ops::Attrs&,
                               const std::vector<TensorType>& inputs,
                               const std::vector<TensorType>&) {
    return op == "fused_conv2d" && inputs[0].shape.dim(3) == 1;
  };
  auto g = parse(text(1));
  FuseEpilogue pass(one_channel);
  EXPECT_TRUE(run_pass(pass, *g));
  const ir::Node& relu = output_node(*g, "y");
  EXPECT_EQ(relu.op_name(), "relu");  // not joined: the activation would change argmax
  const ir::Node& f = *relu.input(0)->node();
  ASSERT_EQ(f.op_name(), "fused_conv2d");
  EXPECT_EQ(f.attrs().get_string("pool"), "max_argmax");
  EXPECT_EQ(f.attrs().get_string("activation"), "none");
  EXPECT_TRUE(f.attrs().get_bool("has_bias"));
  ASSERT_EQ(f.num_outputs(), 2);
  EXPECT_EQ(relu.input(0), f.output(0));
  EXPECT_EQ(output_node(*g, "g").input(1), f.output(1));
  EXPECT_EQ(f.output(1)->type(), (TensorType{DType::kU8, Shape{4, 13, 13, 32}}));
  EXPECT_EQ(count_ops(*g, "max_pool2d_argmax"), 0u);

  for (auto [channels, query] : {std::pair{1, false}, std::pair{3, true}}) {
    auto other = parse(text(channels));
    FuseEpilogue p(query ? one_channel : KernelQuery{});
    EXPECT_TRUE(run_pass(p, *other));  // conv + bias still fuse
    EXPECT_EQ(count_ops(*other, "max_pool2d_argmax"), 1u) << channels << " " << query;
  }
}

// A layer of several input channels joins its argmax pooling where the kernel query says the
// device runs that fused node; the query is asked about the fused node's own signature.
TEST(FuseEpilogue, ArgmaxPoolingJoinsWhereTheDeviceHasAKernel) {
  const char* text = R"(graph @g {
    %x = input() {dtype=f32, name="x", shape=[2, 13, 13, 32]}
    %w = variable() {dtype=f32, name="w", shape=[3, 3, 32, 64]}
    %b = variable() {dtype=f32, name="b", shape=[64]}
    %c = conv2d(%x, %w)
    %z = add(%c, %b)
    %p = max_pool2d_argmax(%z) {ksize=[2, 2], strides=[2, 2]}
    %y = relu(%p)
    return {"y": %y, "am": %p#1}
  })";
  for (bool has_kernel : {true, false}) {
    SCOPED_TRACE(has_kernel);
    std::vector<std::string> asked;
    KernelQuery query = [&](const std::string& op, const ops::Attrs& attrs,
                            const std::vector<TensorType>& inputs,
                            const std::vector<TensorType>& outputs) {
      asked.push_back(op);
      EXPECT_EQ(attrs.get_string("pool"), "max_argmax");
      EXPECT_EQ(attrs.get_ints("pool_ksize"), (std::vector<int64_t>{2, 2}));
      EXPECT_TRUE(attrs.get_bool("has_bias"));
      EXPECT_EQ(inputs.size(), 3u);
      EXPECT_EQ(outputs, (std::vector<TensorType>{{DType::kF32, Shape{2, 5, 5, 64}},
                                                  {DType::kU8, Shape{2, 5, 5, 64}}}));
      return has_kernel;
    };
    auto g = parse(text);
    FuseEpilogue pass(query);
    EXPECT_TRUE(run_pass(pass, *g));  // conv + bias fuse either way
    EXPECT_EQ(asked, (std::vector<std::string>{"fused_conv2d"}));
    EXPECT_EQ(count_ops(*g, "max_pool2d_argmax"), has_kernel ? 0u : 1u);
    const ir::Node& f = *output_node(*g, "y").input(0)->node();
    EXPECT_EQ(f.op_name(), has_kernel ? "fused_conv2d" : "max_pool2d_argmax");
  }
}

TEST(FuseEpilogue, ResidualAndGeluWithTransposes) {
  auto g = parse(R"(graph @g {
    %x = input() {dtype=f32, name="x", shape=[16, 8]}
    %w = input() {dtype=f32, name="w", shape=[4, 16]}
    %b = input() {dtype=f32, name="b", shape=[4]}
    %r = input() {dtype=f32, name="r", shape=[8, 4]}
    %mm = matmul(%x, %w) {transpose_a=true, transpose_b=true}
    %z = add(%mm, %b)
    %s = add(%r, %z)
    %y = gelu(%s) {approximate=true}
    return {"y": %y}
  })");
  FuseEpilogue pass;
  EXPECT_TRUE(run_pass(pass, *g));
  const ir::Node& f = output_node(*g, "y");
  ASSERT_EQ(f.op_name(), "fused_matmul");
  EXPECT_EQ(f.attrs().get_string("activation"), "gelu_tanh");
  EXPECT_TRUE(f.attrs().get_bool("has_bias"));
  EXPECT_TRUE(f.attrs().get_bool("has_residual"));
  EXPECT_TRUE(f.attrs().get_bool("transpose_a"));
  EXPECT_EQ(f.num_inputs(), 4);
  EXPECT_EQ(g->num_nodes(), 5u);
}

TEST(FuseEpilogue, Conv2dBiasSigmoid) {
  auto g = parse(R"(graph @g {
    %x = input() {dtype=f32, name="x", shape=[1, 8, 8, 3]}
    %k = variable() {dtype=f32, name="k", shape=[3, 3, 3, 6]}
    %b = variable() {dtype=f32, name="b", shape=[6]}
    %c = conv2d(%x, %k) {padding="SAME", strides=[2, 2]}
    %z = add(%c, %b)
    %y = sigmoid(%z)
    return {"y": %y}
  })");
  FuseEpilogue pass;
  EXPECT_TRUE(run_pass(pass, *g));
  const ir::Node& f = output_node(*g, "y");
  ASSERT_EQ(f.op_name(), "fused_conv2d");
  EXPECT_EQ(f.attrs().get_string("activation"), "sigmoid");
  EXPECT_EQ(f.attrs().get_string("padding"), "SAME");
  EXPECT_EQ(f.attrs().get_ints("strides"), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(f.output()->shape(), (Shape{1, 4, 4, 6}));
}

TEST(FuseEpilogue, StopsWhereAnIntermediateHasAnotherUser) {
  // The pre-activation feeds the backward pass too: the bias folds in, the relu stays.
  auto g = parse(R"(graph @g {
    %x = input() {dtype=f32, name="x", shape=[8, 16]}
    %w = input() {dtype=f32, name="w", shape=[16, 4]}
    %b = input() {dtype=f32, name="b", shape=[4]}
    %dy = input() {dtype=f32, name="dy", shape=[8, 4]}
    %mm = matmul(%x, %w)
    %z = add(%mm, %b)
    %y = relu(%z)
    %dz = relu_grad(%dy, %z)
    return {"y": %y, "dz": %dz}
  })");
  FuseEpilogue pass;
  EXPECT_TRUE(run_pass(pass, *g));
  const ir::Node& f = *output_node(*g, "y").input(0)->node();
  ASSERT_EQ(f.op_name(), "fused_matmul");
  EXPECT_EQ(f.attrs().get_string("activation"), "none");
  EXPECT_TRUE(f.attrs().get_bool("has_bias"));
  EXPECT_EQ(output_node(*g, "dz").input(1), f.output());
}

TEST(FuseEpilogue, LeavesWhatDoesNotMatch) {
  auto g = parse(R"(graph @g {
    %x = input() {dtype=f32, name="x", shape=[8, 16]}
    %w = input() {dtype=f32, name="w", shape=[16, 4]}
    %b2 = input() {dtype=f32, name="b2", shape=[1, 4]}
    %mm = matmul(%x, %w)
    %z = add(%mm, %b2)
    %mm2 = matmul(%x, %w) {transpose_a=false}
    %y2 = exp(%mm2)
    %mm3 = matmul(%x, %w)
    %e3 = relu(%mm3)
    return {"z": %z, "y2": %y2, "mm3": %mm3, "e3": %e3}
  })");
  FuseEpilogue pass;
  EXPECT_FALSE(run_pass(pass, *g));  // [1, 4] is no [N] bias; exp is no epilogue; mm3 is an output
  EXPECT_EQ(count_ops(*g, "matmul"), 3u);
}

TEST(FuseEpilogue, FusedNodeTakesOverControlEdges) {
  // Training graphs order every variable read before the update: the fused node inherits that.
  auto g = parse(R"(graph @g {
    %x = input() {dtype=f32, name="x", shape=[8, 16]}
    %w = variable() {dtype=f32, name="w", shape=[16, 4]}
    %r0 = input() {dtype=f32, name="r0", shape=[8, 4]}
    %mm = matmul(%x, %w)
    %q = neg(%r0) after(%mm)
    %s = add(%mm, %q)
    %y = tanh(%s)
    return {"y": %y}
  })");
  FuseEpilogue pass;
  EXPECT_FALSE(run_pass(pass, *g));  // q waits for mm and feeds the chain: fusing is a cycle
  auto h = parse(R"(graph @g {
    %x = input() {dtype=f32, name="x", shape=[8, 16]}
    %w = variable() {dtype=f32, name="w", shape=[16, 4]}
    %b = variable() {dtype=f32, name="b", shape=[4]}
    %mm = matmul(%x, %w)
    %z = add(%mm, %b)
    %y = tanh(%z)
    %nw = input() {dtype=f32, name="nw", shape=[16, 4]}
    %upd = assign(%w, %nw) after(%mm)
    %upd_b = assign(%b, %b) after(%z)
    return {"y": %y}
  })");
  EXPECT_TRUE(run_pass(pass, *h));
  const ir::Node* f = &output_node(*h, "y");
  ASSERT_EQ(f->op_name(), "fused_matmul");
  for (const char* update : {"upd", "upd_b"}) {
    const auto& ctl = h->find_node(update)->control_inputs();
    EXPECT_EQ(std::count(ctl.begin(), ctl.end(), f), 1) << update;
  }
}

}  // namespace
}  // namespace tern::passes
