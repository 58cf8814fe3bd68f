// Tests for the Keras-style initializers: fans, constant values, statistics over large samples,
// bounds, seed reproducibility and lookup by name.
#include "tern/runtime/initializers.h"

#include <gtest/gtest.h>

#include <cmath>

#include "tests/support/random_tensor.h"

namespace tern::runtime::init {
namespace {

struct Stats {
  double mean = 0, stddev = 0, max_abs = 0;
};

Stats stats(const Tensor& t) {
  Stats s;
  std::vector<double> v = t.to_doubles();
  for (double x : v) {
    s.mean += x;
    s.max_abs = std::max(s.max_abs, std::fabs(x));
  }
  s.mean /= static_cast<double>(v.size());
  for (double x : v) s.stddev += (x - s.mean) * (x - s.mean);
  s.stddev = std::sqrt(s.stddev / static_cast<double>(v.size()));
  return s;
}

TEST(Initializers, FansFollowKeras) {
  auto fans = [](Shape s) {
    Fans f = compute_fans(s);
    return std::make_pair(f.in, f.out);
  };
  EXPECT_EQ(fans({}), std::make_pair(1.0, 1.0));
  EXPECT_EQ(fans({7}), std::make_pair(7.0, 7.0));
  EXPECT_EQ(fans({784, 128}), std::make_pair(784.0, 128.0));
  EXPECT_EQ(fans({3, 3, 16, 32}), std::make_pair(144.0, 288.0));  // HWIO
  EXPECT_EQ(fans({5, 4, 6}), std::make_pair(20.0, 30.0));
}

TEST(Initializers, ConstantsFillEveryDType) {
  EXPECT_EQ(zeros()({2, 3}).to_doubles(), std::vector<double>(6, 0.0));
  EXPECT_EQ(ones()({4}, DType::kI32).to_doubles(), std::vector<double>(4, 1.0));
  Tensor c = constant(2.5)({2, 2}, DType::kBF16);
  EXPECT_EQ(c.dtype(), DType::kBF16);
  EXPECT_EQ(c.to_doubles(), std::vector<double>(4, 2.5));
}

TEST(Initializers, GlorotUniformHasKerasLimit) {
  Tensor w = glorot_uniform()({300, 500}, DType::kF32, 1);
  double limit = std::sqrt(6.0 / 800.0);
  Stats s = stats(w);
  EXPECT_LE(s.max_abs, limit);
  EXPECT_GT(s.max_abs, 0.99 * limit);
  EXPECT_NEAR(s.mean, 0.0, 0.01 * limit);
  EXPECT_NEAR(s.stddev, limit / std::sqrt(3.0), 0.01 * limit);
}

TEST(Initializers, TruncatedVarianceScalingHitsTheTargetVariance) {
  struct Case {
    Initializer init;
    Shape shape;
    double variance;
  };
  std::vector<Case> cases = {
      {glorot_normal(), {400, 600}, 2.0 / 1000.0},
      {he_normal(), {3, 3, 64, 128}, 2.0 / 576.0},
      {lecun_normal(), {500, 300}, 1.0 / 500.0},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.init.name());
    Stats s = stats(c.init(c.shape, DType::kF32, 7));
    double target = std::sqrt(c.variance);
    EXPECT_NEAR(s.mean, 0.0, 0.02 * target);
    EXPECT_NEAR(s.stddev, target, 0.02 * target);
    // Cut at two stddevs of the underlying (wider) normal.
    EXPECT_LE(s.max_abs, 2.0 * target / 0.87962566103423978 * (1 + 1e-6));
  }
}

TEST(Initializers, HeUniformAndUntruncatedNormal) {
  Stats u = stats(he_uniform()({256, 400}, DType::kF64, 3));
  double limit = std::sqrt(6.0 / 256.0);
  EXPECT_LE(u.max_abs, limit);
  EXPECT_NEAR(u.stddev, limit / std::sqrt(3.0), 0.01 * limit);
  Initializer n = variance_scaling(4.0, FanMode::kFanOut, Distribution::kUntruncatedNormal);
  Stats s = stats(n({100, 400}, DType::kF32, 5));
  EXPECT_NEAR(s.stddev, 0.1, 0.002);
  EXPECT_GT(s.max_abs, 0.3);  // untruncated tails reach past 3 stddevs in 40k samples
}

TEST(Initializers, PlainRandomInitializersUseKerasDefaults) {
  Stats u = stats(random_uniform()({200, 200}, DType::kF32, 1));
  EXPECT_LE(u.max_abs, 0.05);
  EXPECT_NEAR(u.stddev, 0.1 / std::sqrt(12.0), 0.001);
  Stats n = stats(random_normal(1.0, 0.2)({200, 200}, DType::kF32, 2));
  EXPECT_NEAR(n.mean, 1.0, 0.005);
  EXPECT_NEAR(n.stddev, 0.2, 0.004);
  Tensor t = truncated_normal()({200, 200}, DType::kF32, 3);
  EXPECT_LE(stats(t).max_abs, 0.1 * (1 + 1e-6));
}

TEST(Initializers, SeedsReproduce) {
  for (const std::string& name : initializer_names()) {
    Initializer init = by_name(name);
    Tensor a = init({20, 30}, DType::kF32, 11), b = init({20, 30}, DType::kF32, 11);
    EXPECT_TRUE(bitwise_equal(a, b)) << name;
    if (name != "zeros" && name != "ones") {
      EXPECT_FALSE(bitwise_equal(a, init({20, 30}, DType::kF32, 12))) << name;
    }
  }
}

TEST(Initializers, LookupByNameAndErrors) {
  EXPECT_EQ(by_name("GlorotUniform").name(), "glorot_uniform");
  EXPECT_EQ(by_name("he-normal").name(), "he_normal");
  EXPECT_TERN_ERROR(by_name("glorot_unifrom"), ErrorCode::kNotFound,
                    "did you mean 'glorot_uniform'");
  EXPECT_TERN_ERROR(he_normal()({4, 4}, DType::kI32), ErrorCode::kInvalidArgument,
                    "initializer 'he_normal': dtype i32");
  EXPECT_TERN_ERROR(variance_scaling(0.0, FanMode::kFanIn, Distribution::kUniform),
                    ErrorCode::kInvalidArgument, "scale must be > 0");
}

}  // namespace
}  // namespace tern::runtime::init
