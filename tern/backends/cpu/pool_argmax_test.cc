// max_pool2d_argmax / max_pool2d_grad_argmax on cpu_vec against ref, and against the ops they
// replace: the pooled values are max_pool2d's, the gradient is max_pool2d_grad's (bit for bit: each
// dx element is one dy or +0 for windows that do not overlap); a bad argmax is an error naming it.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "tern/backends/cpu/cpu_isa.h"
#include "tern/backends/cpu/onednn_test_util.h"

namespace tern::testing {
namespace {

using Ints = std::vector<int64_t>;

std::vector<Tensor> call(const std::string& op, const std::vector<Tensor>& in,
                         const ops::Attrs& attrs, const char* kernel) {
  runtime::EagerOptions o;
  o.kernel = kernel;
  return runtime::eager_call(op, in, attrs, o);
}

// `fn` throws an Error whose message holds `text`.
template <typename Fn>
void expect_error_contains(Fn fn, const std::string& text) {
  try {
    fn();
    ADD_FAILURE() << "no error; expected one containing: " << text;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(text), std::string::npos) << e.what();
  }
}

void expect_equal(const Tensor& got, const Tensor& want) {
  ASSERT_EQ(got.type(), want.type());
  for (int64_t i = 0; i < got.num_elements(); ++i) ASSERT_EQ(got.get(i), want.get(i)) << i;
}

class PoolArgmaxCpu : public ::testing::TestWithParam<DType> {};

TEST_P(PoolArgmaxCpu, MatchesRefAndTheOpsItReplaces) {
  const DType d = GetParam();
  struct Case {
    Shape x;
    ops::Attrs attrs;
  };
  const std::vector<Case> cases = {
      {{4, 26, 26, 32}, {{"ksize", Ints{2, 2}}, {"strides", Ints{2, 2}}}},  // the CNN's
      {{3, 7, 9, 70},  // SAME: clipped windows; 70 channels = two blocks
       {{"ksize", Ints{2, 2}}, {"strides", Ints{2, 2}}, {"padding", std::string("SAME")}}},
      {{1, 9, 8, 3}, {{"ksize", Ints{2, 2}}, {"strides", Ints{3, 4}}}},  // uncovered rows, cols
      {{2, 16, 16, 64},  // a ResNet stem's overlapping windows
       {{"ksize", Ints{3, 3}}, {"strides", Ints{2, 2}}, {"padding", std::string("SAME")}}},
  };
  uint64_t seed = 5;
  for (const Case& c : cases) {
    SCOPED_TRACE(str_cat("x ", c.x, " ", dtype_name(d)));
    Tensor x = random_tensor(d, c.x, seed++);
    std::vector<Tensor> fast = call("max_pool2d_argmax", {x}, c.attrs, "cpu_vec");
    std::vector<Tensor> ref = call("max_pool2d_argmax", {x}, c.attrs, "ref");
    expect_equal(fast[0], ref[0]);
    expect_equal(fast[1], ref[1]);
    expect_equal(fast[0], call("max_pool2d", {x}, c.attrs, "ref")[0]);
    Tensor dy = random_tensor(d, fast[0].shape(), seed++);
    ops::Attrs grad_attrs = c.attrs;
    grad_attrs.set("input_shape", c.x.dims());
    Tensor dx = call("max_pool2d_grad_argmax", {dy, fast[1]}, grad_attrs, "cpu_vec")[0];
    Tensor want = call("max_pool2d_grad", {x, dy}, c.attrs, "ref")[0];
    const bool overlapping = c.attrs.get_ints("strides")[0] < c.attrs.get_ints("ksize")[0];
    if (!overlapping) {
      expect_equal(dx, want);
    } else {  // f32 sums against ref's f64 ones, rounded once
      for (int64_t i = 0; i < dx.num_elements(); ++i)
        ASSERT_NEAR(dx.get(i), want.get(i), d == DType::kBF16 ? 2e-2 : 1e-6) << i;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(DTypes, PoolArgmaxCpu, ::testing::Values(DType::kF32, DType::kBF16),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

TEST(PoolArgmaxCpu, BadArgmaxIsAnErrorNamingIt) {
  const ops::Attrs valid = {
      {"ksize", Ints{2, 2}}, {"strides", Ints{2, 2}}, {"input_shape", Ints{1, 4, 4, 2}}};
  ops::Attrs same = {{"ksize", Ints{3, 3}},
                     {"strides", Ints{2, 2}},
                     {"padding", std::string("SAME")},
                     {"input_shape", Ints{1, 4, 4, 2}}};
  Tensor dy = random_tensor(DType::kF32, Shape{1, 2, 2, 2}, 1);
  Tensor argmax(DType::kU8, Shape{1, 2, 2, 2});
  for (int64_t i = 0; i < 8; ++i) argmax.data<uint8_t>()[i] = 3;
  for (const char* kernel : {"cpu_vec", "ref"}) {
    SCOPED_TRACE(kernel);
    argmax.data<uint8_t>()[5] = 4;  // a 2x2 window has positions 0..3
    expect_error_contains(
        [&] {
          call("max_pool2d_grad_argmax", {dy, argmax}, valid, kernel);
        },
        "argmax 4 at position 5 (output [0, 1, 0, 1]) is not a position of a 2x2 window");
    argmax.data<uint8_t>()[5] = 3;
    // SAME 3x3 / 2 over 4x4: the last windows reach past x (pad_top 0, pad_bottom 1).
    argmax.data<uint8_t>()[7] = 8;  // output [0, 1, 1, 1]: row 2 + 2 = 4, outside x
    expect_error_contains(
        [&] {
          call("max_pool2d_grad_argmax", {dy, argmax}, same, kernel);
        },
        "argmax 8 at position 7 (output [0, 1, 1, 1]) names a padding position");
    argmax.data<uint8_t>()[7] = 3;
  }
}

// conv2d_backprop_filter_pooled's kernel and ref: an argmax outside the 2x2 window is an error
// naming it, its position and its output element, under the fused op's name.
TEST(PoolArgmaxCpu, PooledFilterGradientBadArgmaxIsAnErrorNamingIt) {
  const ops::Attrs attrs = {{"filter_shape", Ints{3, 3, 1, 16}},
                            {"pool_ksize", Ints{2, 2}},
                            {"pool_strides", Ints{2, 2}}};
  Tensor x = random_tensor(DType::kF32, Shape{1, 10, 10, 1}, 1);
  Tensor dy = random_tensor(DType::kF32, Shape{1, 4, 4, 16}, 2);
  Tensor argmax(DType::kU8, Shape{1, 4, 4, 16});
  for (int64_t i = 0; i < argmax.num_elements(); ++i) argmax.data<uint8_t>()[i] = i % 4;
  for (const char* kernel : {"cpu_vec", "ref"}) {
    if (!has_candidate("conv2d_backprop_filter_pooled", kernel)) continue;  // switched off
    SCOPED_TRACE(kernel);
    Tensor want = call("conv2d_backprop_filter_pooled", {x, dy, argmax}, attrs, "ref")[0];
    EXPECT_LT(max_rel_error(
                  call("conv2d_backprop_filter_pooled", {x, dy, argmax}, attrs, kernel)[0], want),
              1e-5);
    argmax.data<uint8_t>()[37] = 4;
    expect_error_contains(
        [&] {
          call("conv2d_backprop_filter_pooled", {x, dy, argmax}, attrs, kernel);
        },
        "op 'conv2d_backprop_filter_pooled': argmax 4 at position 37 (output [0, 0, 2, 5]) is not "
        "a position of a 2x2 window");
    argmax.data<uint8_t>()[37] = 1;
  }
}

// The one-channel first layer's kernels are there where the CPU runs AVX-512 and
// TERN_ONE_CHANNEL_POOLED_CONV is not 0 (CTest one_channel_pooled_conv_off runs this with it 0):
// the passes form the fused ops only then.
TEST(PoolArgmaxCpu, OneChannelLayerKernelsFollowTheSwitch) {
  const char* env = std::getenv("TERN_ONE_CHANNEL_POOLED_CONV");
  const bool on = cpu::cpu_runs_v4_variants() && (env == nullptr || std::string(env) != "0");
  EXPECT_EQ(has_candidate("conv2d_backprop_filter_pooled", "cpu_vec"), on);
  // And the argmax-pooled forward of that layer: taken only then.
  const ops::Attrs forward = {{"activation", std::string("none")},
                              {"has_bias", true},
                              {"has_residual", false},
                              {"pool", std::string("max_argmax")},
                              {"pool_ksize", std::vector<int64_t>{2, 2}},
                              {"pool_strides", std::vector<int64_t>{2, 2}}};
  EXPECT_EQ(selected_kernel(
                "fused_conv2d",
                {{DType::kF32, {4, 28, 28, 1}}, {DType::kF32, {3, 3, 1, 32}}, {DType::kF32, {32}}},
                forward) == "cpu_vec",
            on);
}

}  // namespace
}  // namespace tern::testing
