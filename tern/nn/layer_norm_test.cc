// LayerNormalization: shape, parameter count, row statistics and a hand-computed example with
// non-trivial gamma/beta.
#include <gtest/gtest.h>

#include <cmath>

#include "tern/nn/layer_norm.h"
#include "tern/nn/layer_test_util.h"
#include "tests/support/random_tensor.h"

namespace tern::nn {
namespace {

TEST(LayerNormLayer, NormalizesEachRowOverTheLastAxis) {
  auto x = Input({3, 8});
  Model m({x}, {LayerNormalization({.epsilon = 1e-6, .name = "ln"})(x)});
  m.build();
  EXPECT_EQ(m.count_params(), 16);
  Tensor in = ::tern::testing::random_tensor(DType::kF32, {2, 3, 8}, 7, -3.0, 5.0);
  Tensor out = testing::run_model1(m, in);
  ASSERT_EQ(out.shape(), (Shape{2, 3, 8}));
  for (int64_t r = 0; r < 6; ++r) {
    double mean = 0, sq = 0;
    for (int64_t j = 0; j < 8; ++j) mean += out.get(r * 8 + j) / 8;
    for (int64_t j = 0; j < 8; ++j) sq += std::pow(out.get(r * 8 + j) - mean, 2) / 8;
    EXPECT_NEAR(mean, 0.0, 1e-5) << "row " << r;
    EXPECT_NEAR(sq, 1.0, 1e-4) << "row " << r;
  }
}

TEST(LayerNormLayer, MatchesHandComputationWithGammaBeta) {
  auto x = Input({4});
  Model m({x}, {LayerNormalization({.name = "ln_gb"})(x)});
  m.build();
  m.variables().assign("ln_gb/gamma", Tensor::from_values(DType::kF32, {4}, {1, 2, 0.5, -1}));
  m.variables().assign("ln_gb/beta", Tensor::from_values(DType::kF32, {4}, {0, 1, 0, 3}));
  // Row [1, 2, 3, 6]: mean 3, biased variance (4 + 1 + 0 + 9) / 4 = 3.5, epsilon 1e-3.
  Tensor out = testing::run_model1(m, Tensor::from_values(DType::kF32, {1, 4}, {1, 2, 3, 6}));
  double s = std::sqrt(3.5 + 1e-3);
  std::vector<double> want = {-2 / s * 1 + 0, -1 / s * 2 + 1, 0 / s * 0.5 + 0, 3 / s * -1 + 3};
  testing::expect_close(out, Tensor::from_values(DType::kF32, {1, 4}, want), 1e-5);
}

TEST(LayerNormLayer, FixedScaleAndCenterAreNotTrainable) {
  auto x = Input({5});
  Model m({x}, {LayerNormalization({.center = false, .scale = false})(x)});
  m.build();
  EXPECT_TRUE(m.trainable_weights().empty());
  EXPECT_EQ(m.non_trainable_weights().size(), 2u);
}

TEST(LayerNormLayer, RejectsRankOneInputAndBadEpsilon) {
  EXPECT_TERN_ERROR(LayerNormalization({.epsilon = 0, .name = "ln0"}), ErrorCode::kInvalidArgument,
                    "epsilon must be positive");
  auto x = Input(Shape(std::vector<int64_t>{}));
  Model m({x}, {LayerNormalization({.name = "ln_scalar"})(x)});
  EXPECT_TERN_ERROR(m.build(), ErrorCode::kInvalidArgument, "needs input of rank >= 2");
}

}  // namespace
}  // namespace tern::nn
