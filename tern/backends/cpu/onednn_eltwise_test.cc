// Tests for the oneDNN eltwise kernels: gelu (erf form) and gelu_grad against ref in f32 and
// bf16, the tanh form left to the vectorized loop, and on CPUs with AVX-512 the f32 pair left to
// it (on AMD's, the bf16 gelu_grad too).
#include <gtest/gtest.h>

#include "tern/backends/cpu/cpu_isa.h"
#include "tern/backends/cpu/onednn_test_util.h"

namespace tern::testing {
namespace {

// Whether the oneDNN kernel takes `op` in dtype d on this CPU: everything without AVX-512; with
// it the bf16 forward, and on Intel's CPUs the bf16 gelu_grad too.
bool onednn_claims(std::string_view op, DType d) {
  if (!cpu::cpu_runs_v4_variants()) return true;
  if (d != DType::kBF16) return false;
  return op == "gelu" || !cpu::cpu_is_amd();
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
    if (onednn_claims("gelu", d)) expect_onednn_matches_ref("gelu", {x}, erf, tol);
    if (onednn_claims("gelu_grad", d)) expect_onednn_matches_ref("gelu_grad", {dy, x}, erf, tol);
  }
}

INSTANTIATE_TEST_SUITE_P(DTypes, OneDnnEltwise, ::testing::Values(DType::kF32, DType::kBF16),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

TEST(OneDnnEltwiseSelect, ErfFormOnly) {
  const DType d = onednn_claims("gelu", DType::kF32) ? DType::kF32 : DType::kBF16;  // claimed here
  if (d == DType::kBF16 && !cpu_supports_bf16()) GTEST_SKIP() << "oneDNN declines bf16 here";
  EXPECT_EQ(selected_kernel("gelu", {{d, {64}}}, {{"approximate", false}}), "onednn");
  EXPECT_NE(onednn_decline_reason("gelu", {{d, {64}}}, {{"approximate", true}}).find("tanh"),
            std::string::npos);
  EXPECT_NE(selected_kernel("gelu", {{d, {64}}}, {{"approximate", true}}), "onednn");
}

// With AVX-512 the vectorized loop runs the f32 pair and, on AMD's CPUs, the bf16 gelu_grad;
// oneDNN the rest (without AVX-512, all four).
TEST(OneDnnEltwiseSelect, GeluFollowsTheCpu) {
  const ops::Attrs erf = {{"approximate", false}};
  for (DType d : {DType::kF32, DType::kBF16}) {
    SCOPED_TRACE(dtype_name(d));
    if (d == DType::kBF16 && !cpu_supports_bf16()) continue;  // oneDNN declines bf16 here
    const TensorType t = {d, {64}};
    EXPECT_EQ(selected_kernel("gelu_grad", {t, t}, erf),
              onednn_claims("gelu_grad", d) ? "onednn" : "vec");
    EXPECT_EQ(selected_kernel("gelu", {t}, erf), onednn_claims("gelu", d) ? "onednn" : "vec");
  }
}

}  // namespace
}  // namespace tern::testing
