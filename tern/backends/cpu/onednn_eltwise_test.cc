// Tests for the oneDNN eltwise kernels: gelu (erf form) and gelu_grad against ref in f32 and
// bf16, the tanh form left to the vectorized loop, and f32 gelu_grad left to it on AMD CPUs.
#include <gtest/gtest.h>

#include "tern/backends/cpu/cpu_isa.h"
#include "tern/backends/cpu/onednn_test_util.h"

namespace tern::testing {
namespace {

// Where oneDNN leaves f32 gelu_grad to the vectorized loop's AVX-512 build.
bool amd_v4() {
  return cpu::cpu_is_amd() && cpu::cpu_runs_v4_variants();
}

class OneDnnEltwise : public OneDnnDTypeTest {};

TEST_P(OneDnnEltwise, GeluErfMatchesRef) {
  DType d = GetParam();
  double tol = d == DType::kF32 ? 1e-5 : 1e-2;
  ops::Attrs erf = {{"approximate", false}};
  for (const Shape& s : {Shape{7}, Shape{3, 1000}, Shape{2, 5, 5, 16}}) {
    SCOPED_TRACE(str_cat("shape ", s));
    Tensor x = random_tensor(d, s, 1, -6, 6);
    Tensor dy = random_tensor(d, s, 2);
    expect_onednn_matches_ref("gelu", {x}, erf, tol);
    if (d != DType::kF32 || !amd_v4()) expect_onednn_matches_ref("gelu_grad", {dy, x}, erf, tol);
  }
}

INSTANTIATE_TEST_SUITE_P(DTypes, OneDnnEltwise, ::testing::Values(DType::kF32, DType::kBF16),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

TEST(OneDnnEltwiseSelect, ErfFormOnly) {
  EXPECT_EQ(selected_kernel("gelu", {{DType::kF32, {64}}}, {{"approximate", false}}), "onednn");
  EXPECT_NE(
      onednn_decline_reason("gelu", {{DType::kF32, {64}}}, {{"approximate", true}}).find("tanh"),
      std::string::npos);
  EXPECT_NE(selected_kernel("gelu", {{DType::kF32, {64}}}, {{"approximate", true}}), "onednn");
}

// f32 gelu_grad runs the vectorized loop on AMD CPUs with AVX-512, oneDNN elsewhere; bf16 and the
// forward stay oneDNN's everywhere.
TEST(OneDnnEltwiseSelect, GeluGradF32FollowsTheCpu) {
  const ops::Attrs erf = {{"approximate", false}};
  const std::vector<TensorType> f32 = {{DType::kF32, {64}}, {DType::kF32, {64}}};
  EXPECT_EQ(selected_kernel("gelu_grad", f32, erf), amd_v4() ? "vec" : "onednn");
  const std::vector<TensorType> bf16 = {{DType::kBF16, {64}}, {DType::kBF16, {64}}};
  if (onednn_decline_reason("gelu_grad", bf16, erf).empty()) {  // oneDNN computes bf16 here
    EXPECT_EQ(selected_kernel("gelu_grad", bf16, erf), "onednn");
  }
  EXPECT_EQ(selected_kernel("gelu", {{DType::kF32, {64}}}, erf), "onednn");
}

}  // namespace
}  // namespace tern::testing
