// Tests for the oneDNN batch-norm kernels against ref: training, inference and grad over 2-D
// [N, C] and 4-D NHWC inputs, f32 and bf16.
#include <gtest/gtest.h>

#include "tern/backends/cpu/onednn_test_util.h"

namespace tern::testing {
namespace {

class OneDnnBatchNorm : public OneDnnDTypeTest {
 protected:
  double tol() const { return GetParam() == DType::kF32 ? 1e-4 : 3e-2; }
};

TEST_P(OneDnnBatchNorm, MatchesRef) {
  DType d = GetParam();
  uint64_t seed = 1;
  for (const Shape& s : {Shape{16, 5}, Shape{4, 7, 6, 19}, Shape{2, 3, 3, 64}, Shape{1, 3}}) {
    SCOPED_TRACE(str_cat("x ", s));
    int64_t c = s[s.rank() - 1];
    Tensor x = random_tensor(d, s, seed++, -2, 3);
    Tensor gamma = random_tensor(d, {c}, seed++, 0.5, 1.5);
    Tensor beta = random_tensor(d, {c}, seed++);
    ops::Attrs attrs = {{"epsilon", 1e-3}};
    expect_onednn_matches_ref("batch_norm_training", {x, gamma, beta}, attrs, tol());
    Tensor mean = random_tensor(d, {c}, seed++);
    Tensor var = random_tensor(d, {c}, seed++, 0.5, 2);
    expect_onednn_matches_ref("batch_norm_inference", {x, gamma, beta, mean, var}, attrs, tol());
    // The grad with the batch's own statistics, as training produces them.
    runtime::EagerOptions ref;
    ref.kernel = "ref";
    auto stats = runtime::eager_call("batch_norm_training", {x, gamma, beta}, attrs, ref);
    Tensor dy = random_tensor(d, s, seed++);
    expect_onednn_matches_ref("batch_norm_grad", {dy, x, gamma, stats[1], stats[2]}, attrs, tol());
  }
}

INSTANTIATE_TEST_SUITE_P(DTypes, OneDnnBatchNorm, ::testing::Values(DType::kF32, DType::kBF16),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

TEST(OneDnnBatchNormSelect, PickedAndDeclines) {
  // f32 may go to a faster candidate registered ahead of oneDNN; oneDNN still accepts it.
  std::vector<TensorType> in = {
      {DType::kF32, {8, 4, 4, 3}}, {DType::kF32, {3}}, {DType::kF32, {3}}};
  EXPECT_EQ(onednn_decline_reason("batch_norm_training", in), "");
  std::vector<TensorType> bf16 = {
      {DType::kBF16, {8, 4, 4, 3}}, {DType::kBF16, {3}}, {DType::kBF16, {3}}};
  expect_onednn_picked_for_bf16("batch_norm_training", bf16);
  EXPECT_NE(onednn_decline_reason("batch_norm_training",
                                  {{DType::kF32, {3}}, {DType::kF32, {3}}, {DType::kF32, {3}}})
                .find("batch axis"),
            std::string::npos);
}

}  // namespace
}  // namespace tern::testing
