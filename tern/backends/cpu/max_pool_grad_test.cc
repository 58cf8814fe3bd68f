// Tests for the cpu_vec max_pool2d_grad (non-overlapping windows): bitwise equal to ref for
// VALID/SAME windows, strides wider than the window, channel counts across SIMD blocks, ties
// (the first maximum takes the gradient) and NaN (the window's first NaN takes it); chosen over
// oneDNN only where it applies.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "tern/backends/cpu/onednn_test_util.h"

namespace tern::testing {
namespace {

using Ints = std::vector<int64_t>;

// dx from cpu_vec and from ref, compared value by value (every element is a copy of a dy or 0).
void expect_bitwise_ref(const Tensor& x, const Tensor& dy, const ops::Attrs& attrs) {
  runtime::EagerOptions fast, ref;
  fast.kernel = "cpu_vec";
  ref.kernel = "ref";
  Tensor got = runtime::eager_call1("max_pool2d_grad", {x, dy}, attrs, fast);
  Tensor want = runtime::eager_call1("max_pool2d_grad", {x, dy}, attrs, ref);
  ASSERT_EQ(got.type(), want.type());
  for (int64_t i = 0; i < got.num_elements(); ++i) {
    ASSERT_EQ(got.get(i), want.get(i)) << "element " << i;
  }
}

struct Case {
  Shape x;
  ops::Attrs attrs;
};

class MaxPoolGradCpu : public ::testing::TestWithParam<DType> {};

TEST_P(MaxPoolGradCpu, MatchesRefBitwise) {
  DType d = GetParam();
  const std::vector<Case> cases = {
      {{2, 8, 8, 16}, {{"ksize", Ints{2, 2}}, {"strides", Ints{2, 2}}}},
      {{3, 7, 9, 70},  // SAME: the last windows are clipped; 70 channels = two blocks
       {{"ksize", Ints{2, 2}}, {"strides", Ints{2, 2}}, {"padding", std::string("SAME")}}},
      {{1, 9, 8, 3}, {{"ksize", Ints{2, 2}}, {"strides", Ints{3, 4}}}},  // rows/cols uncovered
      {{2, 7, 7, 5}, {{"ksize", Ints{2, 2}}, {"strides", Ints{2, 2}}}},  // VALID remainder
      {{2, 10, 10, 8},
       {{"ksize", Ints{3, 3}}, {"strides", Ints{3, 3}}, {"padding", std::string("SAME")}}},
  };
  uint64_t seed = 3;
  runtime::EagerOptions ref;
  ref.kernel = "ref";
  for (const Case& c : cases) {
    SCOPED_TRACE(str_cat("x ", c.x));
    Tensor x = random_tensor(d, c.x, seed++);
    Tensor y = runtime::eager_call1("max_pool2d", {x}, c.attrs, ref);
    Tensor dy = random_tensor(d, y.shape(), seed++);
    expect_bitwise_ref(x, dy, c.attrs);
  }
}

TEST_P(MaxPoolGradCpu, TiesGoToTheFirstMaximumAndNaNWins) {
  DType d = GetParam();
  ops::Attrs attrs = {{"ksize", Ints{2, 2}}, {"strides", Ints{2, 2}}};
  // Integers in [0, 3): most windows hold several maxima.
  Tensor x = random_tensor(d, {2, 10, 10, 6}, 7, 0, 3);
  for (int64_t i = 0; i < x.num_elements(); ++i) x.set(i, std::floor(x.get(i)));
  x.set(5, std::numeric_limits<double>::quiet_NaN());  // a window's first element
  x.set(6 * 11 + 2, std::numeric_limits<double>::quiet_NaN());
  Tensor dy = random_tensor(d, {2, 5, 5, 6}, 8);
  expect_bitwise_ref(x, dy, attrs);
}

INSTANTIATE_TEST_SUITE_P(DTypes, MaxPoolGradCpu, ::testing::Values(DType::kF32, DType::kBF16),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

TEST(MaxPoolGradCpuSelect, NonOverlappingWindowsOnly) {
  ops::Attrs pool2 = {{"ksize", Ints{2, 2}}, {"strides", Ints{2, 2}}};
  EXPECT_EQ(selected_kernel("max_pool2d_grad",
                            {{DType::kF32, {1, 8, 8, 4}}, {DType::kF32, {1, 4, 4, 4}}}, pool2),
            "cpu_vec");
  ops::Attrs overlap = {{"ksize", Ints{3, 3}}, {"strides", Ints{1, 1}}};
  EXPECT_NE(selected_kernel("max_pool2d_grad",
                            {{DType::kF32, {1, 8, 8, 4}}, {DType::kF32, {1, 6, 6, 4}}}, overlap),
            "cpu_vec");
}

}  // namespace
}  // namespace tern::testing
