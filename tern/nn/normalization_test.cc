// Normalization: adapt() statistics against a hand computation, batch-independence of the
// streaming merge, standardized outputs (mean ~0, variance ~1), given statistics, adapting a
// built layer through the model's variables, and errors.
#include <gtest/gtest.h>

#include <cmath>

#include "tern/nn/dense.h"
#include "tern/nn/layer_test_util.h"
#include "tern/nn/normalization.h"

namespace tern::nn {
namespace {

TEST(NormalizationLayer, AdaptComputesMeanAndBiasedVariancePerFeature) {
  auto norm = Normalization({.name = "norm_hand"});
  // Feature 0: 1, 2, 3, 6 -> mean 3, variance 3.5; feature 1: 10, 10, 10, 10 -> mean 10, variance
  // 0.
  norm->adapt(Tensor::from_values(DType::kF32, {4, 2}, {1, 10, 2, 10, 3, 10, 6, 10}));
  ASSERT_TRUE(norm->adapted());
  EXPECT_DOUBLE_EQ(norm->mean()[0], 3.0);
  EXPECT_DOUBLE_EQ(norm->variance()[0], 3.5);
  EXPECT_DOUBLE_EQ(norm->mean()[1], 10.0);
  EXPECT_DOUBLE_EQ(norm->variance()[1], 0.0);
  auto x = Input({2});
  Model m({x}, {norm(x)});
  m.build();
  EXPECT_TRUE(m.trainable_weights().empty());
  EXPECT_EQ(m.non_trainable_weights().size(), 2u);
  // A zero variance divides by Keras' epsilon floor (1e-7), so x = mean maps to exactly 0.
  Tensor out = testing::run_model1(m, Tensor::from_values(DType::kF32, {1, 2}, {6, 10}));
  EXPECT_NEAR(out.get(0), 3 / std::sqrt(3.5), 1e-6);
  EXPECT_EQ(out.get(1), 0.0);
}

TEST(NormalizationLayer, StreamingAdaptEqualsOneShotAndStandardizes) {
  // 3-D data [n, steps, features]: statistics over samples and steps, per feature.
  Tensor data = ::tern::testing::random_tensor(DType::kF32, {300, 2, 3}, 11, -4.0, 9.0);
  for (int64_t i = 0; i < data.num_elements(); ++i) {
    if (i % 3 == 1) data.set(i, data.get(i) * 50 + 1000);  // a feature with a large offset
  }
  auto one_shot = Normalization({.name = "norm_once"});
  one_shot->adapt(data);
  auto streamed = Normalization({.name = "norm_stream"});
  int64_t begin = 0;
  const int64_t sizes[] = {1, 7, 100, 64, 128};  // uneven batches summing to 300
  size_t k = 0;
  streamed->adapt([&]() -> std::optional<Tensor> {
    if (begin >= 300) return std::nullopt;
    int64_t end = std::min<int64_t>(300, begin + sizes[k++ % 5]);
    Tensor b = data.slice_rows(begin, end);
    begin = end;
    return b;
  });
  for (size_t j = 0; j < 3; ++j) {
    EXPECT_NEAR(streamed->mean()[j], one_shot->mean()[j],
                1e-9 * (1 + std::abs(one_shot->mean()[j])));
    EXPECT_NEAR(streamed->variance()[j], one_shot->variance()[j], 1e-9 * one_shot->variance()[j]);
  }
  auto x = Input({2, 3});
  Model m({x}, {one_shot(x)});
  m.build();
  Tensor out = testing::run_model1(m, data);
  for (int64_t j = 0; j < 3; ++j) {
    double mean = 0, sq = 0;
    int64_t n = out.num_elements() / 3;
    for (int64_t i = 0; i < n; ++i) mean += out.get(i * 3 + j) / static_cast<double>(n);
    for (int64_t i = 0; i < n; ++i)
      sq += std::pow(out.get(i * 3 + j) - mean, 2) / static_cast<double>(n);
    EXPECT_NEAR(mean, 0.0, 1e-4) << "feature " << j;
    EXPECT_NEAR(sq, 1.0, 1e-4) << "feature " << j;
  }
}

TEST(NormalizationLayer, GivenStatisticsAndIntegerInput) {
  auto x = Input({2}, DType::kI64);
  Model m({x}, {Normalization({.mean = {1, -2}, .variance = {4, 0.25}})(x)});
  m.build();
  Tensor out = testing::run_model1(m, Tensor::from_values(DType::kI64, {1, 2}, {5, -1}));
  testing::expect_close(out, Tensor::from_values(DType::kF32, {1, 2}, {2, 2}), 1e-6);
}

TEST(NormalizationLayer, AdaptAfterBuildWritesTheModelsVariables) {
  auto norm = Normalization({.name = "norm_late"});
  auto x = Input({1});
  Model m({x}, {Dense(1, DenseOptions{.name = "after_norm"})(norm(x))});
  m.build();  // built with mean 0, variance 1
  Tensor data = Tensor::from_values(DType::kF32, {2, 1}, {2, 4});
  EXPECT_TERN_ERROR(norm->adapt(data), ErrorCode::kFailedPrecondition,
                    "adapt(data, model.variables())");
  norm->adapt(data, m.variables());
  EXPECT_EQ(m.variables().get("norm_late/mean").get(0), 3.0);
  EXPECT_EQ(m.variables().get("norm_late/variance").get(0), 1.0);
  EXPECT_TERN_ERROR(norm->adapt(Tensor::zeros(DType::kF32, {2, 3}), m.variables()),
                    ErrorCode::kInvalidArgument, "built for 1 features");
}

TEST(NormalizationLayer, Errors) {
  EXPECT_TERN_ERROR(Normalization({.mean = {1}, .variance = {}}), ErrorCode::kInvalidArgument,
                    "given together");
  auto norm = Normalization({.name = "norm_err"});
  EXPECT_TERN_ERROR(norm->adapt(Tensor::zeros(DType::kF32, {4})), ErrorCode::kInvalidArgument,
                    "rank >= 2");
  EXPECT_TERN_ERROR(norm->adapt(Tensor::zeros(DType::kF32, {0, 3})), ErrorCode::kInvalidArgument,
                    "no samples");
  norm->adapt(Tensor::zeros(DType::kF32, {2, 3}));
  auto x = Input({4});
  Model m({x}, {norm(x)});
  EXPECT_TERN_ERROR(m.build(), ErrorCode::kInvalidArgument, "adapted to 3 features");
}

}  // namespace
}  // namespace tern::nn
