// Tests for the oneDNN pooling kernels: max/avg/global pooling and the max/avg gradients against
// ref (SAME and VALID, strides, windows with ties), in f32 and bf16.
#include <gtest/gtest.h>

#include <cmath>

#include "tern/backends/cpu/onednn_test_util.h"

namespace tern::testing {
namespace {

using Ints = std::vector<int64_t>;

struct PoolCase {
  Shape x;
  ops::Attrs attrs;
};

std::vector<PoolCase> pool_cases() {
  return {
      {{2, 7, 6, 3},
       {{"ksize", Ints{3, 3}}, {"strides", Ints{2, 2}}, {"padding", std::string("SAME")}}},
      {{2, 7, 6, 3},
       {{"ksize", Ints{3, 3}}, {"strides", Ints{2, 2}}, {"padding", std::string("VALID")}}},
      {{1, 8, 8, 16}, {{"ksize", Ints{2, 2}}, {"strides", Ints{2, 2}}}},
      {{2, 9, 5, 4},
       {{"ksize", Ints{3, 2}}, {"strides", Ints{1, 2}}, {"padding", std::string("SAME")}}},
      {{1, 5, 5, 2},
       {{"ksize", Ints{1, 1}}, {"strides", Ints{2, 2}}, {"padding", std::string("SAME")}}},
  };
}

class OneDnnPool : public OneDnnDTypeTest {
 protected:
  double tol() const { return GetParam() == DType::kF32 ? 1e-6 : 1e-2; }
};

TEST_P(OneDnnPool, ForwardAndGradsMatchRef) {
  DType d = GetParam();
  uint64_t seed = 1;
  runtime::EagerOptions ref;
  ref.kernel = "ref";
  for (const PoolCase& c : pool_cases()) {
    SCOPED_TRACE(str_cat("x ", c.x));
    Tensor x = random_tensor(d, c.x, seed++);
    expect_onednn_matches_ref("max_pool2d", {x}, c.attrs, tol());
    expect_onednn_matches_ref("avg_pool2d", {x}, c.attrs, tol());
    Tensor y = runtime::eager_call1("max_pool2d", {x}, c.attrs, ref);
    Tensor dy = random_tensor(d, y.shape(), seed++);
    expect_onednn_matches_ref("max_pool2d_grad", {x, dy}, c.attrs, tol());
    ops::Attrs grad_attrs = c.attrs;
    grad_attrs.set("input_shape", c.x.dims());
    expect_onednn_matches_ref("avg_pool2d_grad", {dy}, grad_attrs, tol());
  }
}

TEST_P(OneDnnPool, MaxGradSendsTiesToTheFirstMaximum) {
  DType d = GetParam();
  // Integers in [0, 3): most windows hold several maxima.
  Tensor x = random_tensor(d, {2, 9, 9, 5}, 7, 0, 3);
  for (int64_t i = 0; i < x.num_elements(); ++i) x.set(i, std::floor(x.get(i)));
  ops::Attrs attrs = {
      {"ksize", Ints{3, 3}}, {"strides", Ints{2, 2}}, {"padding", std::string("SAME")}};
  Tensor dy = random_tensor(d, {2, 5, 5, 5}, 8);
  expect_onednn_matches_ref("max_pool2d_grad", {x, dy}, attrs, tol());
}

TEST_P(OneDnnPool, GlobalAvgPoolMatchesRef) {
  DType d = GetParam();
  Tensor x = random_tensor(d, {3, 7, 5, 9}, 11);
  expect_onednn_matches_ref("global_avg_pool", {x}, {}, tol());
  expect_onednn_matches_ref("global_avg_pool", {x}, {{"keepdims", true}}, tol());
}

INSTANTIATE_TEST_SUITE_P(DTypes, OneDnnPool, ::testing::Values(DType::kF32, DType::kBF16),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

TEST(OneDnnPoolSelect, Picked) {
  ops::Attrs attrs = {{"ksize", Ints{2, 2}}, {"strides", Ints{2, 2}}};
  // Overlapping windows: oneDNN (non-overlapping ones go to cpu_vec: max_pool_cpu.cc,
  // max_pool_grad_test.cc).
  EXPECT_EQ(selected_kernel("max_pool2d", {{DType::kF32, {1, 8, 8, 4}}}, attrs), "cpu_vec");
  ops::Attrs overlap = {{"ksize", Ints{3, 3}}, {"strides", Ints{2, 2}}};
  EXPECT_EQ(selected_kernel("max_pool2d", {{DType::kF32, {1, 9, 9, 4}}}, overlap), "onednn");
  EXPECT_EQ(selected_kernel("max_pool2d_grad",
                            {{DType::kF32, {1, 9, 9, 4}}, {DType::kF32, {1, 4, 4, 4}}}, overlap),
            "onednn");
}

}  // namespace
}  // namespace tern::testing
