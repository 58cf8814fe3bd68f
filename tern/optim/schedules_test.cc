// Learning-rate schedules against Keras' formulas.
#include "tern/optim/schedules.h"

#include <gtest/gtest.h>

#include <cmath>
#include <numbers>

#include "tests/support/random_tensor.h"

namespace tern::optim {
namespace {

TEST(Schedules, KerasFormulas) {
  EXPECT_DOUBLE_EQ(ConstantSchedule(0.1)(1000), 0.1);
  PiecewiseConstantDecay pw({.boundaries = {10, 20}, .values = {1.0, 0.5, 0.1}});
  EXPECT_DOUBLE_EQ(pw(0), 1.0);
  EXPECT_DOUBLE_EQ(pw(10), 0.5);
  EXPECT_DOUBLE_EQ(pw(25), 0.1);
  EXPECT_NEAR(ExponentialDecay(0.1, {.decay_steps = 100, .decay_rate = 0.5})(50),
              0.1 * std::pow(0.5, 0.5), 1e-12);
  EXPECT_NEAR(
      ExponentialDecay(0.1, {.decay_steps = 100, .decay_rate = 0.5, .staircase = true})(150), 0.05,
      1e-12);
  CosineDecay cos(1.0, {.decay_steps = 100, .alpha = 0.1});
  EXPECT_NEAR(cos(0), 1.0, 1e-12);
  EXPECT_NEAR(cos(50), 0.9 * 0.5 + 0.1, 1e-12);
  EXPECT_NEAR(cos(100), 0.1, 1e-12);
  EXPECT_NEAR(cos(500), 0.1, 1e-12);
  CosineDecayRestarts sgdr(1.0, {.first_decay_steps = 10, .t_mul = 2.0, .m_mul = 0.5});
  EXPECT_NEAR(sgdr(0), 1.0, 1e-12);
  EXPECT_NEAR(sgdr(10), 0.5, 1e-12);   // second period starts at m_mul
  EXPECT_NEAR(sgdr(30), 0.25, 1e-12);  // third period after 10 + 20 steps
  EXPECT_NEAR(sgdr(20), 0.5 * 0.5 * (1 + std::cos(std::numbers::pi * 0.5)), 1e-12);
  LinearWarmup warm(4, std::make_shared<ConstantSchedule>(0.8));
  EXPECT_NEAR(warm(0), 0.2, 1e-12);
  EXPECT_NEAR(warm(3), 0.8, 1e-12);
  EXPECT_NEAR(warm(100), 0.8, 1e-12);
}

TEST(Schedules, BadArguments) {
  EXPECT_TERN_ERROR(PiecewiseConstantDecay({.boundaries = {10}, .values = {1.0}}),
                    ErrorCode::kInvalidArgument, "one more value");
  EXPECT_TERN_ERROR(CosineDecay(1.0, {.decay_steps = 0}), ErrorCode::kInvalidArgument,
                    "decay_steps");
  EXPECT_TERN_ERROR(ExponentialDecay(1.0, {.decay_steps = -5, .decay_rate = 0.5}),
                    ErrorCode::kInvalidArgument, "decay_steps");
  EXPECT_TERN_ERROR(CosineDecayRestarts(1.0, {.first_decay_steps = 10, .t_mul = 0}),
                    ErrorCode::kInvalidArgument, "t_mul");
}

}  // namespace
}  // namespace tern::optim
