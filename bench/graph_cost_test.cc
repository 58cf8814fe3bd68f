// graph_cost (the suite's floors, bench/run_suite.py) on hand-made graphs: the FLOPs of matmuls
// and of convolutions in every direction, the 1x1 convolutions counted apart (held to the matmul
// peak), and the bytes of the optimizer and normalization nodes.
#include "bench/graph_cost.h"

#include <gtest/gtest.h>

#include "tern/ir/parser.h"

namespace tern::bench {
namespace {

TEST(GraphCost, ConvolutionsCountTheir1x1FlopsApart) {
  auto g = ir::parse_graph(R"(graph @g {
    %x = input() {dtype=f32, name="x", shape=[2, 8, 8, 4]}
    %w3 = input() {dtype=f32, name="w3", shape=[3, 3, 4, 6]}
    %w1 = input() {dtype=f32, name="w1", shape=[1, 1, 6, 5]}
    %dy = input() {dtype=f32, name="dy", shape=[2, 8, 8, 5]}
    %a = input() {dtype=f32, name="a", shape=[3, 7]}
    %b = input() {dtype=f32, name="b", shape=[7, 2]}
    %y3 = conv2d(%x, %w3) {strides=[1, 1], padding="SAME"}
    %y1 = conv2d(%y3, %w1) {strides=[1, 1], padding="VALID"}
    %dw1 = conv2d_backprop_filter(%y3, %dy) {strides=[1, 1], padding="VALID", filter_shape=[1, 1, 6, 5]}
    %m = matmul(%a, %b)
    return {"y1": %y1, "dw1": %dw1, "m": %m}
  })");
  const GraphCost c = graph_cost(*g);
  // 3x3: 2*8*8*6 outputs x 3*3*4 taps; 1x1 forward and filter gradient: 2*8*8*5 x 6 each.
  const double conv3 = 2.0 * (2 * 8 * 8 * 6) * (3 * 3 * 4);
  const double conv1 = 2 * 2.0 * (2 * 8 * 8 * 5) * 6;
  EXPECT_DOUBLE_EQ(c.conv_flops, conv3 + conv1);
  EXPECT_DOUBLE_EQ(c.conv_1x1_flops, conv1);
  EXPECT_DOUBLE_EQ(c.matmul_flops, 2.0 * 3 * 2 * 7);
  EXPECT_DOUBLE_EQ(c.flops(), conv3 + conv1 + 2.0 * 3 * 2 * 7);
}

// A layer trained fused with its pooling counts as its unfused nodes: the forward with a pooled
// output and both pooled gradients each do the convolution's multiply-adds.
TEST(GraphCost, PooledConvolutionsCountTheirConvolution) {
  auto g = ir::parse_graph(R"(graph @g {
    %x = input() {dtype=f32, name="x", shape=[2, 13, 13, 4]}
    %w = input() {dtype=f32, name="w", shape=[3, 3, 4, 8]}
    %dy = input() {dtype=f32, name="dy", shape=[2, 5, 5, 8]}
    %am = input() {dtype=u8, name="am", shape=[2, 5, 5, 8]}
    %y = fused_conv2d(%x, %w) {activation="none", has_bias=false, has_residual=false, pool="max_argmax", pool_ksize=[2, 2], pool_strides=[2, 2]}
    %dx = conv2d_backprop_input_pooled(%dy, %w, %am) {input_shape=[2, 13, 13, 4], pool_ksize=[2, 2], pool_strides=[2, 2]}
    %dw = conv2d_backprop_filter_pooled(%x, %dy, %am) {filter_shape=[3, 3, 4, 8], pool_ksize=[2, 2], pool_strides=[2, 2]}
    return {"y": %y#0, "dx": %dx, "dw": %dw}
  })");
  // 2*11*11*8 convolution outputs x 3*3*4 taps, three times.
  EXPECT_DOUBLE_EQ(graph_cost(*g).conv_flops, 3 * 2.0 * (2 * 11 * 11 * 8) * (3 * 3 * 4));

  // Both gradients from one node count as the two.
  auto both = ir::parse_graph(R"(graph @g {
    %x = input() {dtype=f32, name="x", shape=[2, 13, 13, 4]}
    %w = input() {dtype=f32, name="w", shape=[3, 3, 4, 8]}
    %dy = input() {dtype=f32, name="dy", shape=[2, 5, 5, 8]}
    %am = input() {dtype=u8, name="am", shape=[2, 5, 5, 8]}
    %g = conv2d_backprop_pooled(%x, %dy, %w, %am) {pool_ksize=[2, 2], pool_strides=[2, 2]}
    return {"dx": %g#0, "dw": %g#1}
  })");
  EXPECT_DOUBLE_EQ(graph_cost(*both).conv_flops, 2 * 2.0 * (2 * 11 * 11 * 8) * (3 * 3 * 4));
}

}  // namespace
}  // namespace tern::bench
