// simplify: text IR in, structure out.
#include "tern/passes/simplify.h"

#include "tern/passes/pass_test_util.h"

namespace tern::passes {
namespace {

using testing::count_ops;
using testing::output_node;
using testing::parse;
using testing::run_pass;

TEST(Simplify, ArithmeticIdentitiesDisappear) {
  auto g = parse(R"(graph @g {
    %x = input() {dtype=f32, name="x", shape=[2, 3]}
    %zero = constant() {value=tensor<f32[]>[0]}
    %ones = constant() {value=tensor<f32[3]>[1, 1, 1]}
    %a = add(%zero, %x)
    %s = sub(%a, %zero)
    %m = mul(%s, %ones)
    %d = div(%m, %ones)
    %p = pow(%d, %ones)
    %n1 = neg(%p)
    %n2 = neg(%n1)
    return {"y": %n2}
  })");
  Simplify pass;
  EXPECT_TRUE(run_pass(pass, *g));
  EXPECT_EQ(output_node(*g, "y").name(), "x");
  for (const char* op : {"add", "sub", "mul", "div", "pow"}) EXPECT_EQ(count_ops(*g, op), 0u) << op;
}

// max_pool2d(relu(x)) -> relu(max_pool2d(x)) when the pool is relu's only reader; a relu read
// by anything else (a gradient, a graph output) stays before the pool, and bit-exact mode keeps
// the order.
TEST(Simplify, ReluMovesAfterItsOnlyMaxPool) {
  const char* text = R"(graph @g {
    %x = input() {dtype=f32, name="x", shape=[2, 8, 8, 4]}
    %r = relu(%x)
    %p = max_pool2d(%r) {ksize=[2, 2], padding="VALID", strides=[2, 2]}
    return {"y": %p}
  })";
  auto g = parse(text);
  Simplify pass;
  EXPECT_TRUE(run_pass(pass, *g));
  const ir::Node& y = output_node(*g, "y");
  ASSERT_EQ(y.op_name(), "relu");
  const ir::Node& pool = *y.input(0)->node();
  ASSERT_EQ(pool.op_name(), "max_pool2d");
  EXPECT_EQ(pool.input(0)->node()->name(), "x");
  EXPECT_EQ(pool.attrs().get_ints("ksize"), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(y.output()->type(), TensorType(DType::kF32, Shape({2, 4, 4, 4})));

  auto exact = parse(text);
  Simplify bit_exact(/*bit_exact=*/true);
  EXPECT_FALSE(run_pass(bit_exact, *exact));

  auto shared = parse(R"(graph @g {
    %x = input() {dtype=f32, name="x", shape=[2, 8, 8, 4]}
    %r = relu(%x)
    %p = max_pool2d(%r) {ksize=[2, 2], padding="VALID", strides=[2, 2]}
    return {"y": %p, "r": %r}
  })");
  Simplify again;
  EXPECT_FALSE(run_pass(again, *shared));
}

TEST(Simplify, KeepsOpsWhoseConstantBroadcastsOrDiffers) {
  auto g = parse(R"(graph @g {
    %x = input() {dtype=f32, name="x", shape=[3]}
    %zeros = constant() {value=tensor<f32[2, 3]>[0, 0, 0, 0, 0, 0]}
    %two = constant() {value=tensor<f32[]>[2]}
    %mixed = constant() {value=tensor<f32[3]>[1, 1, 2]}
    %a = add(%x, %zeros)
    %m = mul(%x, %two)
    %k = mul(%x, %mixed)
    %zero_x = constant() {value=tensor<f32[]>[0]}
    %z = sub(%zero_x, %x)
    return {"a": %a, "m": %m, "k": %k, "z": %z}
  })");
  Simplify pass;
  EXPECT_FALSE(run_pass(pass, *g));
}

TEST(Simplify, BitExactModeKeepsPlusZeroAdds) {
  const char* text = R"(graph @g {
    %x = input() {dtype=f32, name="x", shape=[3]}
    %pz = constant() {value=tensor<f32[]>[0]}
    %nz = constant() {value=tensor<f32[]>[-0]}
    %a = add(%x, %pz)
    %b = add(%x, %nz)
    %c = sub(%x, %pz)
    %d = sub(%x, %nz)
    %two = constant() {value=tensor<f32[]>[2]}
    %e = pow(%x, %two)
    return {"a": %a, "b": %b, "c": %c, "d": %d, "e": %e}
  })";
  auto exact = parse(text);
  Simplify bit_exact(true);
  EXPECT_TRUE(run_pass(bit_exact, *exact));
  EXPECT_EQ(output_node(*exact, "a").op_name(), "add");  // -0 + 0 is +0
  EXPECT_EQ(output_node(*exact, "b").name(), "x");
  EXPECT_EQ(output_node(*exact, "c").name(), "x");
  EXPECT_EQ(output_node(*exact, "d").op_name(), "sub");
  EXPECT_EQ(output_node(*exact, "e").op_name(), "pow");
  auto fast = parse(text);
  Simplify any;
  EXPECT_TRUE(run_pass(any, *fast));
  for (const char* o : {"a", "b", "c", "d"}) EXPECT_EQ(output_node(*fast, o).name(), "x") << o;
  EXPECT_EQ(output_node(*fast, "e").op_name(), "square");
}

TEST(Simplify, IntegerZerosHaveNoSign) {
  auto g = parse(R"(graph @g {
    %x = input() {dtype=i32, name="x", shape=[3]}
    %z = constant() {value=tensor<i32[]>[0]}
    %a = add(%x, %z)
    return {"a": %a}
  })");
  Simplify bit_exact(true);
  EXPECT_TRUE(run_pass(bit_exact, *g));
  EXPECT_EQ(output_node(*g, "a").name(), "x");
}

TEST(Simplify, ReshapeChainsCollapse) {
  auto g = parse(R"(graph @g {
    %x = input() {dtype=f32, name="x", shape=[2, 3, 4]}
    %r1 = reshape(%x) {shape=[6, 4]}
    %r2 = expand_dims(%r1) {axis=0}
    %r3 = reshape(%r2) {shape=[24]}
    %back1 = reshape(%x) {shape=[-1]}
    %back2 = reshape(%back1) {shape=[2, 3, 4]}
    %same = squeeze(%x)
    return {"flat": %r3, "back": %back2, "same": %same}
  })");
  Simplify pass;
  EXPECT_TRUE(run_pass(pass, *g));
  const ir::Node& flat = output_node(*g, "flat");
  EXPECT_EQ(flat.op_name(), "reshape");
  EXPECT_EQ(flat.input(0)->node()->name(), "x");
  EXPECT_EQ(flat.attrs().get_ints("shape"), (std::vector<int64_t>{24}));
  EXPECT_EQ(output_node(*g, "back").name(), "x");
  EXPECT_EQ(output_node(*g, "same").name(), "x");
}

TEST(Simplify, TransposesCompose) {
  auto g = parse(R"(graph @g {
    %x = input() {dtype=f32, name="x", shape=[2, 3, 4]}
    %t1 = transpose(%x) {perm=[1, 2, 0]}
    %t2 = transpose(%t1) {perm=[2, 0, 1]}
    %u1 = transpose(%x) {perm=[]}
    %u2 = transpose(%u1) {perm=[1, 0, 2]}
    %id = transpose(%x) {perm=[0, 1, 2]}
    return {"inverse": %t2, "composed": %u2, "id": %id}
  })");
  Simplify pass;
  EXPECT_TRUE(run_pass(pass, *g));
  EXPECT_EQ(output_node(*g, "inverse").name(), "x");
  EXPECT_EQ(output_node(*g, "id").name(), "x");
  const ir::Node& c = output_node(*g, "composed");
  ASSERT_EQ(c.op_name(), "transpose");
  EXPECT_EQ(c.input(0)->node()->name(), "x");
  // u1 = x.T ([4, 3, 2]); u2 swaps its first two dims: out dims are x dims [1, 2, 0].
  EXPECT_EQ(c.attrs().get_ints("perm"), (std::vector<int64_t>{1, 2, 0}));
  EXPECT_EQ(c.output()->shape(), (Shape{3, 4, 2}));
}

TEST(Simplify, CastsToTheSameTypeAndLosslessRoundTrips) {
  auto g = parse(R"(graph @g {
    %x = input() {dtype=bf16, name="x", shape=[3]}
    %same = cast(%x) {dtype=bf16}
    %up = cast(%x) {dtype=f32}
    %down = cast(%up) {dtype=bf16}
    %y = input() {dtype=f32, name="y", shape=[3]}
    %narrow = cast(%y) {dtype=bf16}
    %wide = cast(%narrow) {dtype=f32}
    %ones = broadcast_to(%y) {shape=[3]}
    return {"same": %same, "down": %down, "lossy": %wide, "b": %ones}
  })");
  Simplify pass;
  EXPECT_TRUE(run_pass(pass, *g));
  EXPECT_EQ(output_node(*g, "same").name(), "x");
  EXPECT_EQ(output_node(*g, "down").name(), "x");
  EXPECT_EQ(output_node(*g, "lossy").op_name(), "cast");  // f32 -> bf16 -> f32 rounds
  EXPECT_EQ(output_node(*g, "b").name(), "y");
}

TEST(Simplify, RewrittenReadsKeepTheirPlaceBeforeAnUpdate) {
  auto g = parse(R"(graph @g {
    %v = variable() {dtype=f32, name="v", shape=[2, 3]}
    %x = input() {dtype=f32, name="x", shape=[2, 3]}
    %r1 = reshape(%v) {shape=[6]}
    %r2 = reshape(%r1) {shape=[3, 2]}
    %n1 = neg(%v)
    %n2 = neg(%n1)
    %upd = assign(%v, %x) after(%r1, %r2, %n1, %n2)
    return {"r": %r2, "n": %n2}
  })");
  Simplify pass;
  EXPECT_TRUE(run_pass(pass, *g));
  // r2 became reshape(v) and still runs before the update; neg(neg(v)) would be v itself,
  // which has no read to order, so it stays.
  const ir::Node& r = output_node(*g, "r");
  EXPECT_EQ(r.input(0)->node()->name(), "v");
  const auto& ctl = g->find_node("upd")->control_inputs();
  EXPECT_NE(std::find(ctl.begin(), ctl.end(), &r), ctl.end());
  EXPECT_EQ(output_node(*g, "n").name(), "n2");
  EXPECT_EQ(count_ops(*g, "neg"), 2u);
}

}  // namespace
}  // namespace tern::passes
