// The fused optimizer-update ops against hand-computed Keras values, on every kernel (ref and
// cpu_vec), plus their inference and run-time errors.
#include <gtest/gtest.h>

#include <cmath>

#include "tern/kernels/kernel.h"
#include "tern/runtime/eager.h"
#include "tests/support/random_tensor.h"

namespace tern {
namespace {

Tensor f32(double v) {
  return Tensor::scalar(DType::kF32, v);
}
Tensor vec(std::vector<double> values) {
  int64_t n = static_cast<int64_t>(values.size());
  return Tensor::from_values(DType::kF32, Shape({n}), values);
}

class OptimizerKernels : public ::testing::TestWithParam<std::string> {
 protected:
  runtime::EagerOptions options() const {
    runtime::EagerOptions o;
    o.kernel = GetParam();
    return o;
  }
  void call(std::string_view op, const std::vector<Tensor>& in, const ops::Attrs& attrs) const {
    EXPECT_TRUE(runtime::eager_call(op, in, attrs, options()).empty());
  }
};

// p = 1, g = 0.5, lr = 0.1 throughout.
TEST_P(OptimizerKernels, SgdPlainMomentumNesterovAndL2) {
  Tensor p = vec({1}), g = vec({0.5});
  call("sgd_update", {f32(0.1), p, g}, {{"num_params", int64_t{1}}});
  EXPECT_NEAR(p.get(0), 0.95, 1e-7);

  Tensor q = vec({1}), vel = vec({0});
  ops::Attrs mom = {{"num_params", int64_t{1}}, {"momentum", 0.9}};
  call("sgd_update", {f32(0.1), q, g, vel}, mom);
  EXPECT_NEAR(vel.get(0), -0.05, 1e-7);
  EXPECT_NEAR(q.get(0), 0.95, 1e-7);
  call("sgd_update", {f32(0.1), q, g, vel}, mom);  // vel = 0.9 * -0.05 - 0.05
  EXPECT_NEAR(vel.get(0), -0.095, 1e-7);
  EXPECT_NEAR(q.get(0), 0.855, 1e-7);

  Tensor r = vec({1}), vel2 = vec({0});
  call("sgd_update", {f32(0.1), r, g, vel2},
       {{"num_params", int64_t{1}}, {"momentum", 0.9}, {"nesterov", true}});
  EXPECT_NEAR(r.get(0), 1 + 0.9 * -0.05 - 0.05, 1e-7);

  Tensor s = vec({1});
  call("sgd_update", {f32(0.1), s, g}, {{"num_params", int64_t{1}}, {"weight_decay", 0.1}});
  EXPECT_NEAR(s.get(0), 1 - 0.1 * (0.5 + 0.1), 1e-7);
}

TEST_P(OptimizerKernels, AdamFirstStepMovesByLrAndAdamWDecaysFirst) {
  // Step 1: m = 0.05, v = 0.00025, alpha = lr * sqrt(0.001) / 0.1, so p moves by ~lr * sign(g).
  Tensor p = vec({1, -2}), g = vec({0.5, -0.25}), m = vec({0, 0}), v = vec({0, 0});
  Tensor step = Tensor::scalar(DType::kI64, 1);
  call("adam_update", {f32(0.1), step, p, g, m, v}, {{"num_params", int64_t{1}}});
  EXPECT_NEAR(m.get(0), 0.05, 1e-7);
  EXPECT_NEAR(v.get(0), 0.00025, 1e-9);
  double alpha = 0.1 * std::sqrt(1 - 0.999) / (1 - 0.9);
  EXPECT_NEAR(p.get(0), 1 - alpha * 0.05 / (std::sqrt(0.00025) + 1e-7), 1e-6);
  EXPECT_NEAR(p.get(0), 0.9, 1e-5);
  EXPECT_NEAR(p.get(1), -1.9, 1e-5);

  Tensor pw = vec({1}), mw = vec({0}), vw = vec({0});
  call("adamw_update", {f32(0.1), step, pw, vec({0.5}), mw, vw},
       {{"num_params", int64_t{1}}, {"weight_decay", 0.1}});
  EXPECT_NEAR(pw.get(0), 1 - 0.1 * 0.1 - 0.1, 1e-5);  // decay by lr * wd * p, then the Adam step
}

TEST_P(OptimizerKernels, AmsgradKeepsTheMaximumSecondMoment) {
  Tensor p = vec({0}), m = vec({0}), v = vec({1}), vhat = vec({4});
  call("adam_update", {f32(0.1), Tensor::scalar(DType::kF32, 2), p, vec({0}), m, v, vhat},
       {{"num_params", int64_t{1}}, {"amsgrad", true}});
  EXPECT_NEAR(v.get(0), 0.999, 1e-7);
  EXPECT_NEAR(vhat.get(0), 4, 1e-7);
}

TEST_P(OptimizerKernels, RmspropPlainCenteredAndMomentum) {
  // rms = 0.1 * 0.25 = 0.025; inc = 0.1 * 0.5 / sqrt(0.025 + 1e-7).
  Tensor p = vec({1}), rms = vec({0});
  call("rmsprop_update", {f32(0.1), p, vec({0.5}), rms}, {{"num_params", int64_t{1}}});
  EXPECT_NEAR(rms.get(0), 0.025, 1e-8);
  EXPECT_NEAR(p.get(0), 1 - 0.05 / std::sqrt(0.025 + 1e-7), 1e-6);

  // centered: mg = 0.05, denom = 0.025 - 0.0025 + 1e-7 ~ 0.15^2.
  Tensor q = vec({1}), rms2 = vec({0}), mom = vec({0}), mg = vec({0});
  ops::Attrs attrs = {{"num_params", int64_t{1}}, {"centered", true}, {"momentum", 0.5}};
  call("rmsprop_update", {f32(0.1), q, vec({0.5}), rms2, mom, mg}, attrs);
  double inc = 0.05 / std::sqrt(0.0225 + 1e-7);
  EXPECT_NEAR(mg.get(0), 0.05, 1e-8);
  EXPECT_NEAR(mom.get(0), inc, 1e-6);
  EXPECT_NEAR(q.get(0), 1 - inc, 1e-6);
}

TEST_P(OptimizerKernels, ManyParametersOfDifferentShapesInOneNode) {
  // Updating three parameters in one node equals updating each alone.
  std::vector<Shape> shapes = {Shape({40000}), Shape({3, 5}), Shape({0})};
  std::vector<Tensor> together = {f32(0.05), Tensor::scalar(DType::kI64, 4)};
  std::vector<Tensor> alone_params;
  for (int list = 0; list < 4; ++list) {  // params, grads, m, v
    for (size_t i = 0; i < shapes.size(); ++i) {
      double lo = list == 3 ? 0.0 : -1.0;
      together.push_back(testing::random_tensor(DType::kF32, shapes[i], 100 * list + i, lo, 1.0));
    }
  }
  std::vector<std::vector<Tensor>> singles;
  for (size_t i = 0; i < shapes.size(); ++i) {
    std::vector<Tensor> in = {together[0], together[1]};
    for (int list = 0; list < 4; ++list) in.push_back(together[2 + list * 3 + i].clone());
    singles.push_back(in);
  }
  call("adam_update", together, {{"num_params", int64_t{3}}});
  for (size_t i = 0; i < shapes.size(); ++i) {
    call("adam_update", singles[i], {{"num_params", int64_t{1}}});
    for (int list = 0; list < 4; ++list) {
      EXPECT_TRUE(bitwise_equal(together[2 + list * 3 + i], singles[i][2 + list]))
          << "parameter " << i << " list " << list;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Kernels, OptimizerKernels, ::testing::Values("ref", "cpu_vec"));

TEST(OptimizerOps, InferenceNamesTheMismatchedParameterAndBothShapes) {
  EXPECT_TERN_ERROR(
      runtime::eager_call("sgd_update",
                          {f32(0.1), vec({1, 2}), vec({1, 2, 3}), vec({1}), vec({1, 2})},
                          {{"num_params", int64_t{2}}}),
      ErrorCode::kInvalidArgument,
      "parameter 0: gradient (input 3) is f32[1] but the parameter is f32[2]");
  EXPECT_TERN_ERROR(runtime::eager_call("adam_update",
                                        {f32(0.1), Tensor::scalar(DType::kI64, 1), vec({1}),
                                         vec({1}), vec({1}), Tensor(DType::kF64, Shape({1}))},
                                        {{"num_params", int64_t{1}}}),
                    ErrorCode::kInvalidArgument,
                    "parameter 0: slot v (input 5) is f64[1] but the parameter is f32[1]");
}

TEST(OptimizerOps, InferenceRejectsBadCountsScalarsAndAttrs) {
  ops::Attrs one = {{"num_params", int64_t{1}}};
  EXPECT_TERN_ERROR(
      runtime::eager_call("adam_update",
                          {f32(0.1), Tensor::scalar(DType::kI64, 1), vec({1}), vec({1})}, one),
      ErrorCode::kInvalidArgument, "expects at least 6 inputs");
  EXPECT_TERN_ERROR(
      runtime::eager_call("sgd_update", {f32(0.1), vec({1}), vec({1}), vec({1})}, one),
      ErrorCode::kInvalidArgument,
      "expects lr, then 2 lists (params, grads) of num_params = 1 tensors each: 3 inputs, got 4");
  EXPECT_TERN_ERROR(runtime::eager_call("sgd_update", {vec({0.1}), vec({1}), vec({1})}, one),
                    ErrorCode::kInvalidArgument, "lr (input 0) must be a scalar");
  EXPECT_TERN_ERROR(
      runtime::eager_call(
          "adam_update",
          {f32(0.1), Tensor::scalar(DType::kBool, 1), vec({1}), vec({1}), vec({1}), vec({1})}, one),
      ErrorCode::kInvalidArgument, "step (input 1) has unsupported dtype bool");
  EXPECT_TERN_ERROR(runtime::eager_call("sgd_update", {f32(0.1), vec({1}), vec({1})},
                                        {{"num_params", int64_t{1}}, {"nesterov", true}}),
                    ErrorCode::kInvalidArgument, "nesterov requires momentum > 0");
  EXPECT_TERN_ERROR(runtime::eager_call("rmsprop_update", {f32(0.1), vec({1}), vec({1}), vec({1})},
                                        {{"num_params", int64_t{1}}, {"rho", 1.5}}),
                    ErrorCode::kInvalidArgument, "attribute rho must be in [0, 1)");
  EXPECT_TERN_ERROR(runtime::eager_call("sgd_update", {f32(0.1), vec({1}), vec({1})},
                                        {{"num_params", int64_t{0}}}),
                    ErrorCode::kInvalidArgument, "num_params must be >= 1");
  EXPECT_TERN_ERROR(runtime::eager_call("assign", {vec({1, 2}), vec({1})}),
                    ErrorCode::kInvalidArgument, "value f32[1] does not match variable f32[2]");
}

// The 16-bit copies an update writes (attribute copies): listed ascending, one per listed
// parameter after the slots, bf16 or f16 of the f32 parameter's shape.
TEST(OptimizerOps, InferenceRejectsBadCopies) {
  auto bf16 = [](std::vector<double> v) { return vec(std::move(v)).cast(DType::kBF16); };
  auto copies = [](std::vector<int64_t> c) {
    return ops::Attrs{{"num_params", int64_t{2}}, {"copies", std::move(c)}};
  };
  const Tensor p = vec({1, 2}), g = vec({1, 1});
  EXPECT_TERN_ERROR(
      runtime::eager_call("sgd_update", {f32(0.1), p, p, g, g, bf16({1, 2})}, copies({1, 0})),
      ErrorCode::kInvalidArgument,
      "expects lr, then 2 lists (params, grads) of num_params = 2 "
      "tensors each, then 2 copies: 7 inputs, got 6");
  EXPECT_TERN_ERROR(
      runtime::eager_call("sgd_update", {f32(0.1), p, p, g, g, bf16({1, 2}), bf16({1, 2})},
                          copies({1, 0})),
      ErrorCode::kInvalidArgument,
      "attribute copies must list ascending parameter indices in [0, 2), got 0 at "
      "position 1");
  EXPECT_TERN_ERROR(
      runtime::eager_call("sgd_update", {f32(0.1), p, p, g, g, bf16({1, 2})}, copies({2})),
      ErrorCode::kInvalidArgument, "got 2 at position 0");
  EXPECT_TERN_ERROR(
      runtime::eager_call("sgd_update", {f32(0.1), p, p, g, g, vec({1, 2}).cast(DType::kF64)},
                          copies({1})),
      ErrorCode::kInvalidArgument,
      "copy 0 (input 5) of parameter 1 is f64[2]: a copy is bf16, f16 or f32 (rounded to bf16) "
      "of an f32 parameter's shape");
  EXPECT_TERN_ERROR(
      runtime::eager_call("sgd_update", {f32(0.1), p, p, g, g, bf16({1, 2, 3})}, copies({0})),
      ErrorCode::kInvalidArgument, "copy 0 (input 5) of parameter 0 is bf16[3]");
}

// An f32 copy is the updated parameter rounded to bf16, on every kernel.
TEST(OptimizerOps, F32CopiesHoldTheParameterRoundedToBf16) {
  for (std::string kernel : {"ref", "cpu_vec"}) {
    runtime::EagerOptions o;
    o.kernel = kernel;
    // p - 0.5 * g: 1 + 2^-10 (between two bf16 values: rounds to 1) and 3 (exact).
    const Tensor p = vec({1.0 + 1.0 / 1024 + 0.5, 3.5}), g = vec({1, 1}), copy = vec({0, 0});
    runtime::eager_call("sgd_update", {f32(0.5), p, g, copy},
                        {{"num_params", int64_t{1}}, {"copies", std::vector<int64_t>{0}}}, o);
    EXPECT_EQ(p.get(0), 1.0 + 1.0 / 1024) << kernel;
    EXPECT_EQ(copy.get(0), 1.0) << kernel;
    EXPECT_EQ(copy.get(1), 3.0) << kernel;
  }
}

TEST(OptimizerOps, AdamStepBelowOneIsAnErrorOnEveryKernel) {
  for (std::string kernel : {"ref", "cpu_vec"}) {
    runtime::EagerOptions o;
    o.kernel = kernel;
    EXPECT_TERN_ERROR(runtime::eager_call("adam_update",
                                          {f32(0.1), Tensor::scalar(DType::kI64, 0), vec({1}),
                                           vec({1}), vec({0}), vec({0})},
                                          {{"num_params", int64_t{1}}}, o),
                      ErrorCode::kInvalidArgument, "step must be >= 1, got 0");
  }
}

TEST(OptimizerOps, AssignCopiesIntoTheVariable) {
  Tensor var = vec({1, 2, 3});
  Tensor value = vec({4, 5, 6});
  runtime::eager_call("assign", {var, value});
  EXPECT_TRUE(bitwise_equal(var, value));
  EXPECT_NE(var.raw_data(), value.raw_data());
}

}  // namespace
}  // namespace tern
