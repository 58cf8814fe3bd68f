// pool_argmax: text IR in, structure out; the rewritten graph computes the same bits.
#include "tern/passes/pool_argmax.h"

#include "tern/passes/pass_eval_test_util.h"
#include "tern/passes/pass_test_util.h"
#include "tests/support/random_tensor.h"

namespace tern::passes {
namespace {

using testing::count_ops;
using testing::output_node;
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

}  // namespace
}  // namespace tern::passes
