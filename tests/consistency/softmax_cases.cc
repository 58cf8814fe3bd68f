// Consistency cases: softmax, log_softmax (+ grad helpers) and the cross-entropy losses, plus the
// losses' error behaviour on bad labels.
#include <gtest/gtest.h>

#include <cmath>

#include "tern/runtime/eager.h"
#include "tests/consistency/op_case.h"
#include "tests/support/random_tensor.h"

namespace tern::testing {

TERN_OP_CASES(softmax) {
  const ops::Attrs axis0 = {{"axis", int64_t{0}}};
  const ops::Attrs axis1 = {{"axis", int64_t{1}}};
  return {
      {"softmax", {In({3, 5}, -2, 2)}},
      {"softmax", {In({4, 3}, -2, 2)}, axis0, true, {}, 1e-5, "axis0"},
      {"softmax", {In({2, 4, 3}, -2, 2)}, axis1, true, {}, 1e-5, "3d-axis1"},
      {"log_softmax", {In({3, 5}, -2, 2)}},
      {"log_softmax", {In({2, 4, 3}, -2, 2)}, axis1, true, {}, 1e-5, "3d-axis1"},
      {"softmax_grad", {In({3, 5}), In({3, 5}, 0.05, 1)}},
      {"softmax_grad", {In({4, 3}), In({4, 3}, 0.05, 1)}, axis0, true, {}, 1e-5, "axis0"},
      {"log_softmax_grad", {In({3, 5}), In({3, 5}, -3, -0.1)}},
      {"log_softmax_grad",
       {In({2, 4, 3}), In({2, 4, 3}, -3, -0.1)},
       axis1,
       true,
       {},
       1e-5,
       "3d-axis1"},
      {"sparse_softmax_cross_entropy", {In({4, 5}, -2, 2), Idx({4}, 0, 5)}},
      {"sparse_softmax_cross_entropy",
       {In({6, 3}, -2, 2), Idx({6}, 0, 3, DType::kI32)},
       {},
       true,
       {},
       1e-5,
       "i32-labels"},
      {"softmax_cross_entropy", {In({4, 5}, -2, 2), In({4, 5}, 0, 1)}},
      {"softmax_cross_entropy",
       {In({2, 3, 4}, -2, 2), In({2, 3, 4}, 0, 1)},
       {},
       true,
       {},
       1e-5,
       "3d"},
      {"sigmoid_cross_entropy", {In({3, 4}, -3, 3), In({3, 4}, 0, 1)}},
  };
}

// --- behaviour beyond the case table ---

TEST(SoftmaxOps, SparseCrossEntropyRejectsOutOfRangeLabel) {
  Tensor logits = random_tensor(DType::kF32, {3, 4}, 1);
  Tensor labels = Tensor::from_vector<int64_t>({3}, {0, 4, 1});
  EXPECT_TERN_ERROR(runtime::eager_call("sparse_softmax_cross_entropy", {logits, labels}),
                    ErrorCode::kInvalidArgument, "label 4 in row 1");
  runtime::EagerOptions ref;
  ref.kernel = "ref";
  EXPECT_TERN_ERROR(runtime::eager_call("sparse_softmax_cross_entropy", {logits, labels}, {}, ref),
                    ErrorCode::kInvalidArgument, "label 4 in row 1 is out of range [0, 4)");
  labels = Tensor::from_vector<int64_t>({3}, {0, 1, -1});
  EXPECT_TERN_ERROR(runtime::eager_call("sparse_softmax_cross_entropy", {logits, labels}),
                    ErrorCode::kInvalidArgument, "sparse_softmax_cross_entropy: label -1 in row 2");
}

TEST(SoftmaxOps, FastCrossEntropiesMatchRefOnBigBatches) {
  runtime::EagerOptions ref, fast;
  ref.kernel = "ref";
  fast.kernel = "cpu_vec";
  Tensor logits = random_tensor(DType::kF32, {512, 301}, 5, -8, 8);
  Tensor labels = random_tensor(DType::kI32, {512}, 6, 0, 301);
  Tensor dist = random_tensor(DType::kF32, {512, 301}, 7, 0, 1);
  for (auto [op, second] : {std::pair{"sparse_softmax_cross_entropy", labels},
                            std::pair{"softmax_cross_entropy", dist}}) {
    auto want = runtime::eager_call(op, {logits, second}, {}, ref);
    auto got = runtime::eager_call(op, {logits, second}, {}, fast);
    for (size_t k = 0; k < 2; ++k) {
      EXPECT_TRUE(allclose(got[k], want[k], 1e-5, 1e-6))
          << op << " output " << k << ": max diff " << max_abs_diff(got[k], want[k]);
    }
  }
  Tensor bad = Tensor::from_vector<int32_t>({2}, {1, 301});
  EXPECT_TERN_ERROR(
      runtime::eager_call("sparse_softmax_cross_entropy", {logits.slice_rows(0, 2), bad}, {}, fast),
      ErrorCode::kInvalidArgument, "label 301 in row 1 is out of range [0, 301)");
}

TEST(SoftmaxOps, CrossEntropiesAreStableForLargeLogits) {
  Tensor logits = Tensor::from_values(DType::kF32, {2, 3}, {1000, 0, -1000, -1000, -1000, -999});
  Tensor labels = Tensor::from_vector<int32_t>({2}, {0, 2});
  auto out = runtime::eager_call("sparse_softmax_cross_entropy", {logits, labels});
  EXPECT_NEAR(out[0].get(0), 0.0, 1e-6);
  EXPECT_NEAR(out[0].get(1), std::log(1 + 2 * std::exp(-1.0)), 1e-5);
  Tensor x = Tensor::from_values(DType::kF32, {3}, {-200, 0, 200});
  Tensor z = Tensor::from_values(DType::kF32, {3}, {0, 1, 0});
  Tensor loss = runtime::eager_call1("sigmoid_cross_entropy", {x, z});
  EXPECT_NEAR(loss.get(0), 0.0, 1e-6);
  EXPECT_NEAR(loss.get(1), std::log(2.0), 1e-6);
  EXPECT_NEAR(loss.get(2), 200.0, 1e-3);
}

TEST(SoftmaxOps, DenseCrossEntropyMatchesSparseForOneHotLabels) {
  Tensor logits = random_tensor(DType::kF64, {4, 5}, 3, -3, 3);
  Tensor labels = Tensor::from_vector<int64_t>({4}, {2, 0, 4, 1});
  Tensor onehot(DType::kF64, {4, 5});
  for (int64_t r = 0; r < 4; ++r) onehot.set(r * 5 + static_cast<int64_t>(labels.get(r)), 1.0);
  auto sparse = runtime::eager_call("sparse_softmax_cross_entropy", {logits, labels});
  auto dense = runtime::eager_call("softmax_cross_entropy", {logits, onehot});
  EXPECT_LT(max_abs_diff(sparse[0], dense[0]), 1e-12);
  EXPECT_LT(max_abs_diff(sparse[1], dense[1]), 1e-12);
}

}  // namespace tern::testing
