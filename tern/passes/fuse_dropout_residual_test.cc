// fuse_dropout_residual: text IR in, structure out; the rewritten graph computes the same bits.
#include "tern/passes/fuse_dropout_residual.h"

#include "tern/passes/pass_eval_test_util.h"
#include "tern/passes/pass_test_util.h"
#include "tests/support/random_tensor.h"

namespace tern::passes {
namespace {

using testing::count_ops;
using testing::output_node;
using testing::parse;
using testing::run_pass;

// A residual block's tail and its gradient: dropout, the residual add (r first), and the
// dropout's gradient reading the mask.
std::string block_text(const char* dtype) {
  return str_cat(R"(graph @g {
    %x = input() {dtype=)",
                 dtype, R"(, name="x", shape=[8, 70]}
    %r = input() {dtype=)",
                 dtype, R"(, name="r", shape=[8, 70]}
    %dy = input() {dtype=)",
                 dtype, R"(, name="dy", shape=[8, 70]}
    %off = input() {dtype=i64, name="off", shape=[]}
    %d = dropout(%x, %off) {rate=0.25, seed=9}
    %s = add(%r, %d)
    %dx = dropout_apply(%dy, %d#1) {rate=0.25}
    return {"s": %s, "dx": %dx}
  })");
}

TEST(FuseDropoutResidual, TheAddBecomesTheDropoutsResidual) {
  auto g = parse(block_text("f32"));
  FuseDropoutResidual pass;
  EXPECT_TRUE(run_pass(pass, *g));
  EXPECT_EQ(count_ops(*g, "add"), 0u);
  ASSERT_EQ(count_ops(*g, "dropout"), 1u);
  const ir::Node& d = output_node(*g, "s");
  ASSERT_EQ(d.op_name(), "dropout");
  ASSERT_EQ(d.num_inputs(), 3);
  EXPECT_EQ(d.input(2)->node()->name(), "r");
  EXPECT_EQ(d.attrs().get_float("rate"), 0.25);
  EXPECT_EQ(d.attrs().get_int("seed"), 9);
  EXPECT_EQ(output_node(*g, "dx").input(1), d.output(1));
  EXPECT_FALSE(run_pass(pass, *g));
}

TEST(FuseDropoutResidual, LeavesBroadcastsAndDropoutsReadElsewhere) {
  auto g = parse(R"(graph @g {
    %x = input() {dtype=f32, name="x", shape=[8, 70]}
    %row = input() {dtype=f32, name="row", shape=[70]}
    %r = input() {dtype=f32, name="r", shape=[8, 70]}
    %off = input() {dtype=i64, name="off", shape=[]}
    %d1 = dropout(%x, %off) {rate=0.25}
    %s1 = add(%d1, %row)
    %d2 = dropout(%x, %off) {rate=0.5}
    %s2 = add(%d2, %r)
    %e2 = exp(%d2)
    return {"s1": %s1, "s2": %s2, "e2": %e2}
  })");
  FuseDropoutResidual pass;
  EXPECT_FALSE(run_pass(pass, *g));  // a broadcast row; d2 also read by exp
  EXPECT_EQ(count_ops(*g, "add"), 2u);
}

TEST(FuseDropoutResidual, SameBitsAsTheGraphItReplaces) {
  for (const char* dtype : {"f32", "bf16"}) {
    SCOPED_TRACE(dtype);
    auto plain = parse(block_text(dtype));
    auto g = parse(block_text(dtype));
    FuseDropoutResidual pass;
    ASSERT_TRUE(run_pass(pass, *g));
    const DType d = parse_dtype(dtype);
    runtime::Feeds feeds = {{"x", tern::testing::random_tensor(d, Shape{8, 70}, 1)},
                            {"r", tern::testing::random_tensor(d, Shape{8, 70}, 2)},
                            {"dy", tern::testing::random_tensor(d, Shape{8, 70}, 3)},
                            {"off", Tensor::scalar(DType::kI64, 5)}};
    testing::expect_same_bits(*plain, *g, feeds);
  }
}

}  // namespace
}  // namespace tern::passes
