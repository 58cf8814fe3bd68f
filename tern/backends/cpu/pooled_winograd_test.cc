// The pooled Winograd kernels (pooled_winograd_cpu.cc) against the unfused nodes on the same
// Winograd: the forward's pooled values and argmax, and both gradients, bit for bit (the same
// tiles summed in the same order); which layers they take; a bad argmax's error.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <limits>

#include "tern/backends/cpu/cpu_isa.h"
#include "tern/backends/cpu/onednn_test_util.h"
#include "tern/base/error.h"
#include "tern/ir/parser.h"
#include "tern/runtime/executable.h"
#include "tests/support/conv_pool_block.h"

namespace tern::testing {
namespace {

using Ints = std::vector<int64_t>;

bool runs_pooled_winograd() {
  runtime::initialize();
  return cpu::cpu_runs_v4_variants() && has_candidate("conv2d_backprop_input_pooled", "winograd");
}

// Whether tern's Winograd runs with its default settings: the ctests that switch parts of it off
// (TERN_CONV_WINOGRAD=0 or 2, TERN_WINOGRAD_FUSED=0, TERN_WINOGRAD_ADJOINT=0) run these tests
// too, where the pooled ops go to ref (the tests then check what ran).
bool default_winograd() {
  for (const char* name : {"TERN_CONV_WINOGRAD", "TERN_WINOGRAD_FUSED", "TERN_WINOGRAD_ADJOINT"}) {
    if (std::getenv(name) != nullptr) return false;
  }
  return true;
}

// Whether `op` on these inputs runs on the pooled Winograd ("winograd"), which the tests expect
// wherever the settings are the default.
bool on_winograd(std::string_view op, const std::vector<Tensor>& inputs, const ops::Attrs& attrs) {
  std::vector<TensorType> types;
  for (const Tensor& t : inputs) types.push_back(t.type());
  const bool winograd = selected_kernel(op, types, attrs) == "winograd";
  if (default_winograd()) {
    EXPECT_TRUE(winograd) << op;
  }
  return winograd;
}

ops::Attrs pool_attrs(ops::Attrs base) {
  base.set("pool_ksize", Ints{2, 2});
  base.set("pool_strides", Ints{2, 2});
  return base;
}

ops::Attrs forward_attrs() {
  return pool_attrs({{"activation", std::string("none")},
                     {"has_bias", true},
                     {"has_residual", false},
                     {"pool", std::string("max_argmax")}});
}

const ops::Attrs kPool = {{"ksize", Ints{2, 2}}, {"strides", Ints{2, 2}}};

// A layer: x [n, h, w, c_in], filter [3, 3, c_in, c_out] (VALID), its output pooled 2x2 / 2.
struct Layer {
  int64_t n, h, w, c_in, c_out;
  int64_t out_h() const { return h - 2; }
  int64_t out_w() const { return w - 2; }
  Shape x() const { return {n, h, w, c_in}; }
  Shape filter() const { return {3, 3, c_in, c_out}; }
  Shape conv() const { return {n, out_h(), out_w(), c_out}; }
  Shape pooled() const { return {n, out_h() / 2, out_w() / 2, c_out}; }
};

// The CNN's 32 -> 64 layer (11x11 output: its last row and column are not pooled), an even
// output (12x12, tiles past the pooled rows none), and a wider one with a channel tail.
const Layer kLayers[] = {{4, 13, 13, 32, 64}, {2, 14, 14, 32, 48}, {3, 12, 17, 40, 32}};

TEST(PooledWinograd, ForwardIsTheUnfusedNodesBitForBit) {
  if (!runs_pooled_winograd()) GTEST_SKIP() << "tern's fused Winograd does not run here";
  for (const Layer& l : kLayers) {
    SCOPED_TRACE(l.c_out);
    Tensor x = random_tensor(DType::kF32, l.x(), 1);
    // A NaN: the windows it reaches take it as their maximum.
    x.set(5 * l.c_in + 3, std::numeric_limits<double>::quiet_NaN());
    const Tensor f = random_tensor(DType::kF32, l.filter(), 2);
    const Tensor b = random_tensor(DType::kF32, Shape{l.c_out}, 3);
    const std::vector<Tensor> fused =
        runtime::eager_call("fused_conv2d", {x, f, b}, forward_attrs());
    if (!on_winograd("fused_conv2d", {x, f, b}, forward_attrs())) continue;  // ref: its cases
    const Tensor conv = runtime::eager_call1(
        "fused_conv2d", {x, f, b},
        {{"activation", std::string("none")}, {"has_bias", true}, {"has_residual", false}});
    const std::vector<Tensor> pooled = runtime::eager_call("max_pool2d_argmax", {conv}, kPool);
    EXPECT_TRUE(bitwise_equal(fused[0], pooled[0]));
    EXPECT_TRUE(bitwise_equal(fused[1], pooled[1]));
  }
}

TEST(PooledWinograd, GradientsAreTheUnfusedNodesBitForBit) {
  if (!runs_pooled_winograd()) GTEST_SKIP() << "tern's fused Winograd does not run here";
  for (const Layer& l : kLayers) {
    SCOPED_TRACE(l.c_out);
    const Tensor x = random_tensor(DType::kF32, l.x(), 4);
    const Tensor f = random_tensor(DType::kF32, l.filter(), 5);
    const Tensor dy = random_tensor(DType::kF32, l.pooled(), 6);
    // The argmax of a real pooling (every position 0-3 taken).
    const Tensor argmax =
        runtime::eager_call("max_pool2d_argmax", {random_tensor(DType::kF32, l.conv(), 7)}, kPool)
            .at(1);
    ops::Attrs route = kPool;
    route.set("input_shape", l.conv().dims());
    const Tensor dconv = runtime::eager_call1("max_pool2d_grad_argmax", {dy, argmax}, route);

    const ops::Attrs input_attrs = pool_attrs({{"input_shape", l.x().dims()}});
    const Tensor dx =
        runtime::eager_call1("conv2d_backprop_input_pooled", {dy, f, argmax}, input_attrs);
    if (on_winograd("conv2d_backprop_input_pooled", {dy, f, argmax}, input_attrs)) {
      EXPECT_TRUE(bitwise_equal(dx, runtime::eager_call1("conv2d_backprop_input", {dconv, f},
                                                         {{"input_shape", l.x().dims()}})));
    }

    const ops::Attrs filter_attrs = pool_attrs({{"filter_shape", l.filter().dims()}});
    const Tensor df =
        runtime::eager_call1("conv2d_backprop_filter_pooled", {x, dy, argmax}, filter_attrs);
    if (on_winograd("conv2d_backprop_filter_pooled", {x, dy, argmax}, filter_attrs)) {
      EXPECT_TRUE(bitwise_equal(df, runtime::eager_call1("conv2d_backprop_filter", {x, dconv},
                                                         {{"filter_shape", l.filter().dims()}})));
    }

    // And ref's result, within the Winograd's rounding (exactly, where ref ran).
    runtime::EagerOptions ref;
    ref.kernel = "ref";
    EXPECT_LT(max_rel_error(dx, runtime::eager_call1("conv2d_backprop_input_pooled",
                                                     {dy, f, argmax}, input_attrs, ref)),
              1e-4);
    EXPECT_LT(max_scaled_error(df, runtime::eager_call1("conv2d_backprop_filter_pooled",
                                                        {x, dy, argmax}, filter_attrs, ref)),
              1e-4);
  }
}

// conv2d_backprop_pooled: both gradients from one pass over the tiles, bit for bit the unfused
// nodes' (so the two pooled kernels'), where the filter gradient's halves of blocks of 18 tiles
// fall between images: the CNN's layer (9 tiles an image) and the even one; the third layer (12
// tiles an image, 3 images: 36 tiles, halves of 18) runs on ref.
TEST(PooledWinograd, JointGradientsAreTheUnfusedNodesBitForBit) {
  if (!runs_pooled_winograd()) GTEST_SKIP() << "tern's fused Winograd does not run here";
  for (size_t i = 0; i < std::size(kLayers); ++i) {
    const Layer& l = kLayers[i];
    SCOPED_TRACE(l.c_out);
    const Tensor x = random_tensor(DType::kF32, l.x(), 11);
    const Tensor f = random_tensor(DType::kF32, l.filter(), 12);
    const Tensor dy = random_tensor(DType::kF32, l.pooled(), 13);
    const Tensor argmax =
        runtime::eager_call("max_pool2d_argmax", {random_tensor(DType::kF32, l.conv(), 14)}, kPool)
            .at(1);
    const ops::Attrs attrs = pool_attrs({});
    const std::vector<Tensor> both =
        runtime::eager_call("conv2d_backprop_pooled", {x, dy, f, argmax}, attrs);
    ASSERT_EQ(both.size(), 2u);
    std::vector<TensorType> types;
    for (const Tensor& t : {x, dy, f, argmax}) types.push_back(t.type());
    const std::string kernel = selected_kernel("conv2d_backprop_pooled", types, attrs);
    if (i == 2) {
      EXPECT_EQ(kernel, "ref");
    }
    if (kernel == "winograd") {
      ops::Attrs route = kPool;
      route.set("input_shape", l.conv().dims());
      const Tensor dconv = runtime::eager_call1("max_pool2d_grad_argmax", {dy, argmax}, route);
      EXPECT_TRUE(bitwise_equal(both[0], runtime::eager_call1("conv2d_backprop_input", {dconv, f},
                                                              {{"input_shape", l.x().dims()}})));
      EXPECT_TRUE(
          bitwise_equal(both[1], runtime::eager_call1("conv2d_backprop_filter", {x, dconv},
                                                      {{"filter_shape", l.filter().dims()}})));
    } else if (default_winograd() && i < 2) {
      ADD_FAILURE() << "conv2d_backprop_pooled ran on " << kernel;
    }
    runtime::EagerOptions ref;
    ref.kernel = "ref";
    const std::vector<Tensor> r =
        runtime::eager_call("conv2d_backprop_pooled", {x, dy, f, argmax}, attrs, ref);
    EXPECT_LT(max_rel_error(both[0], r[0]), 1e-4);
    EXPECT_LT(max_scaled_error(both[1], r[1]), 1e-4);
  }
}

// An argmax naming no position of its 2x2 window is an error naming the op and the element.
TEST(PooledWinograd, BadArgmaxIsAnErrorNamingIt) {
  if (!runs_pooled_winograd()) GTEST_SKIP() << "tern's fused Winograd does not run here";
  const Layer l = kLayers[0];
  const Tensor x = random_tensor(DType::kF32, l.x(), 8);
  const Tensor f = random_tensor(DType::kF32, l.filter(), 9);
  const Tensor dy = random_tensor(DType::kF32, l.pooled(), 10);
  Tensor argmax(DType::kU8, l.pooled());
  for (int64_t i = 0; i < argmax.num_elements(); ++i) argmax.set(i, static_cast<double>(i % 4));
  argmax.set(70, 7.0);
  for (const char* op : {"conv2d_backprop_input_pooled", "conv2d_backprop_filter_pooled",
                         "conv2d_backprop_pooled"}) {
    SCOPED_TRACE(op);
    const std::string_view name = op;
    try {
      if (name == "conv2d_backprop_input_pooled") {
        runtime::eager_call(op, {dy, f, argmax}, pool_attrs({{"input_shape", l.x().dims()}}));
      } else if (name == "conv2d_backprop_pooled") {
        runtime::eager_call(op, {x, dy, f, argmax}, pool_attrs({}));
      } else {
        runtime::eager_call(op, {x, dy, argmax}, pool_attrs({{"filter_shape", l.filter().dims()}}));
      }
      ADD_FAILURE() << "no error";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << e.what();
      EXPECT_NE(std::string(e.what()).find(op), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("argmax 7 at position 70"), std::string::npos)
          << e.what();
    }
  }
}

// Layers the fused Winograd does not take (few channels, a stride, bf16, a 3x3 pooling) go to
// other kernels, so the passes keep their unfused nodes there.
TEST(PooledWinograd, TakesOnlyWhatItsWinogradRuns) {
  if (!runs_pooled_winograd()) GTEST_SKIP() << "tern's fused Winograd does not run here";
  auto input_kernel = [](const Layer& l, DType d, ops::Attrs attrs) {
    attrs.set("input_shape", l.x().dims());
    return selected_kernel("conv2d_backprop_input_pooled",
                           {{d, l.pooled()}, {d, l.filter()}, {DType::kU8, l.pooled()}}, attrs);
  };
  const Layer cnn = kLayers[0];
  if (default_winograd()) {
    EXPECT_EQ(input_kernel(cnn, DType::kF32, pool_attrs({})), "winograd");
  }
  EXPECT_NE(input_kernel({4, 13, 13, 8, 16}, DType::kF32, pool_attrs({})), "winograd");
  EXPECT_NE(input_kernel(cnn, DType::kBF16, pool_attrs({})), "winograd");
  ops::Attrs three = pool_attrs({});
  three.set("pool_ksize", Ints{3, 3});
  three.set("pool_strides", Ints{3, 3});
  const Layer for_three{4, 14, 14, 32, 64};
  EXPECT_NE(selected_kernel("conv2d_backprop_input_pooled",
                            {{DType::kF32, Shape{4, 4, 4, 64}},
                             {DType::kF32, for_three.filter()},
                             {DType::kU8, Shape{4, 4, 4, 64}}},
                            [&] {
                              ops::Attrs a = three;
                              a.set("input_shape", for_three.x().dims());
                              return a;
                            }()),
            "winograd");
}

// A training layer's graph compiled as tern compiles a step: where the "winograd" candidates are
// registered (TERN_POOLED_WINOGRAD not 0), the passes form the pooled nodes and they run on them;
// else the convolution-sized gradient stays.
TEST(PooledWinograd, CompiledStepUsesThemWhereRegistered) {
  runtime::initialize();
  if (cpu::cpu_isa() != cpu::CpuIsa::kX86_64_v3) GTEST_SKIP() << "vectorized kernels are off";
  std::unique_ptr<ir::Graph> g = ir::parse_graph(conv_pool_block(4, 13, 32, 64));
  runtime::VariableStore vars;
  std::unique_ptr<runtime::Executable> exe = runtime::Executable::compile(*g, vars, {});
  size_t pooled = 0, routed = 0;
  for (const ir::Node* n : exe->graph().nodes()) {
    pooled += n->op_name() == "conv2d_backprop_pooled" ? 2 : 0;  // both gradients
    pooled += n->op_name() == "conv2d_backprop_input_pooled" ||
              n->op_name() == "conv2d_backprop_filter_pooled" ||
              (n->op_name() == "fused_conv2d" && n->attrs().has("pool") &&
               n->attrs().get_string("pool") == "max_argmax");
    routed += n->op_name() == "max_pool2d_grad_argmax";
  }
  if (!runs_pooled_winograd()) {
    EXPECT_EQ(pooled, 0u);
    EXPECT_EQ(routed, 1u);
  } else if (default_winograd()) {
    EXPECT_EQ(pooled, 3u);
    EXPECT_EQ(routed, 0u);
    // The layer (4 images of 9 tiles) takes both gradients in one node.
    size_t joint = 0;
    for (const ir::Node* n : exe->graph().nodes())
      joint += n->op_name() == "conv2d_backprop_pooled";
    EXPECT_EQ(joint, 1u);
  } else {  // where a gradient's kernel declines, both keep the routed gradient
    EXPECT_TRUE((pooled == 3 && routed == 0) || (pooled <= 1 && routed == 1))
        << pooled << " " << routed;
  }
}

}  // namespace
}  // namespace tern::testing
