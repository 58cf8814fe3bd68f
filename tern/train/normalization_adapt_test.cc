// Normalization::adapt(Dataset) (defined in tern_train): equals adapt(Tensor) for any batching,
// honours `steps`, and rejects (x, y) elements with a message saying what to do.
#include <gtest/gtest.h>

#include <cmath>

#include "tern/data/tensor_slice_dataset.h"
#include "tern/nn/normalization.h"
#include "tests/support/random_tensor.h"

namespace tern {
namespace {

TEST(NormalizationAdapt, DatasetEqualsTensor) {
  Tensor x = testing::random_tensor(DType::kF32, {100, 3}, 5, -10.0, 30.0);
  auto whole = nn::Normalization();
  whole->adapt(x);
  auto streamed = nn::Normalization();
  streamed->adapt(data::from_tensor_slices({x})->batch(16));
  for (size_t j = 0; j < 3; ++j) {
    EXPECT_NEAR(streamed->mean()[j], whole->mean()[j], 1e-10 * (1 + std::abs(whole->mean()[j])));
    EXPECT_NEAR(streamed->variance()[j], whole->variance()[j], 1e-10 * whole->variance()[j]);
  }
  // steps = 2 reads the first 32 samples only.
  auto partial = nn::Normalization();
  partial->adapt(data::from_tensor_slices({x})->batch(16), 2);
  auto first32 = nn::Normalization();
  first32->adapt(x.slice_rows(0, 32));
  EXPECT_NEAR(partial->mean()[0], first32->mean()[0], 1e-10 * (1 + std::abs(first32->mean()[0])));
}

TEST(NormalizationAdapt, RejectsFeatureLabelPairs) {
  Tensor x = Tensor::zeros(DType::kF32, {8, 2});
  Tensor y = Tensor::zeros(DType::kI64, {8});
  auto norm = nn::Normalization({.name = "norm_xy"});
  EXPECT_TERN_ERROR(norm->adapt(data::from_tensor_slices({x, y})->batch(4)),
                    ErrorCode::kInvalidArgument, "map it to the features first");
}

}  // namespace
}  // namespace tern
