// Consistency cases: random_uniform, random_normal, truncated_normal (one case per dtype, since the
// dtype is an attribute), plus distribution and reproducibility checks on large samples.
#include <gtest/gtest.h>

#include <cmath>

#include "tern/runtime/eager.h"
#include "tests/consistency/op_case.h"
#include "tests/support/random_tensor.h"

namespace tern::testing {

TERN_OP_CASES(random) {
  std::vector<OpCase> cases;
  for (DType d : {DType::kF32, DType::kF64, DType::kBF16, DType::kF16}) {
    std::string label(dtype_name(d));
    ops::Attrs base = {{"shape", std::vector<int64_t>{3, 5}}, {"dtype", d}, {"seed", int64_t{7}}};
    ops::Attrs uniform = base, normal = base;
    uniform.set("minval", -2.0).set("maxval", 3.0);
    normal.set("mean", 1.0).set("stddev", 0.5);
    cases.push_back({"random_uniform", {}, uniform, false, {d}, 1e-5, label});
    cases.push_back({"random_normal", {}, normal, false, {d}, 1e-5, label});
    cases.push_back({"truncated_normal", {}, normal, false, {d}, 1e-5, label});
  }
  return cases;
}

// --- behaviour beyond the case table ---

namespace {

struct Moments {
  double mean = 0, stddev = 0, min = INFINITY, max = -INFINITY;
};

Moments moments(const Tensor& t) {
  Moments m;
  std::vector<double> v = t.to_doubles();
  for (double x : v) {
    m.mean += x;
    m.min = std::min(m.min, x);
    m.max = std::max(m.max, x);
  }
  m.mean /= static_cast<double>(v.size());
  for (double x : v) m.stddev += (x - m.mean) * (x - m.mean);
  m.stddev = std::sqrt(m.stddev / static_cast<double>(v.size()));
  return m;
}

Tensor sample(const char* op, DType dtype, int64_t seed, double p0, double p1) {
  bool uniform = std::string(op) == "random_uniform";
  ops::Attrs attrs = {{"shape", std::vector<int64_t>{400, 250}}, {"dtype", dtype}, {"seed", seed}};
  attrs.set(uniform ? "minval" : "mean", p0).set(uniform ? "maxval" : "stddev", p1);
  return runtime::eager_call1(op, {}, attrs);
}

}  // namespace

TEST(RandomOps, UniformHasTheRightRangeAndMoments) {
  for (DType d : {DType::kF32, DType::kF64}) {
    Moments m = moments(sample("random_uniform", d, 1, -1.0, 3.0));
    EXPECT_GE(m.min, -1.0);
    EXPECT_LT(m.max, 3.0);
    EXPECT_NEAR(m.mean, 1.0, 0.02);
    EXPECT_NEAR(m.stddev, 4.0 / std::sqrt(12.0), 0.01);
  }
}

TEST(RandomOps, NormalHasTheRightMoments) {
  for (DType d : {DType::kF32, DType::kF64}) {
    Moments m = moments(sample("random_normal", d, 2, 0.5, 2.0));
    EXPECT_NEAR(m.mean, 0.5, 0.03);
    EXPECT_NEAR(m.stddev, 2.0, 0.02);
    EXPECT_LT(m.min, 0.5 - 4 * 2.0);  // the tails are there
  }
}

TEST(RandomOps, TruncatedNormalStaysWithinTwoStddevs) {
  for (DType d : {DType::kF32, DType::kF64}) {
    Moments m = moments(sample("truncated_normal", d, 3, -1.0, 0.5));
    EXPECT_GE(m.min, -2.0);
    EXPECT_LE(m.max, 0.0);
    EXPECT_NEAR(m.mean, -1.0, 0.01);
    EXPECT_NEAR(m.stddev, 0.5 * 0.87962566103423978, 0.01);  // stddev of N(0,1) cut at +-2
  }
}

TEST(RandomOps, SameSeedSameValuesNewSeedNewValues) {
  for (const char* op : {"random_uniform", "random_normal", "truncated_normal"}) {
    Tensor a = sample(op, DType::kF32, 5, 0, 1), b = sample(op, DType::kF32, 5, 0, 1);
    EXPECT_TRUE(bitwise_equal(a, b)) << op;
    EXPECT_FALSE(bitwise_equal(a, sample(op, DType::kF32, 6, 0, 1))) << op;
  }
}

TEST(RandomOps, BadAttributesAreRejected) {
  ops::Attrs bad = {{"shape", std::vector<int64_t>{2, -1}}};
  EXPECT_TERN_ERROR(runtime::eager_call("random_uniform", {}, bad), ErrorCode::kInvalidArgument,
                    "negative dimension");
  ops::Attrs bad_std = {{"shape", std::vector<int64_t>{2}}, {"stddev", -1.0}};
  EXPECT_TERN_ERROR(runtime::eager_call("random_normal", {}, bad_std), ErrorCode::kInvalidArgument,
                    "stddev >= 0");
  ops::Attrs int_dtype = {{"shape", std::vector<int64_t>{2}}, {"dtype", DType::kI32}};
  EXPECT_TERN_ERROR(runtime::eager_call("truncated_normal", {}, int_dtype),
                    ErrorCode::kInvalidArgument, "not supported");
}

}  // namespace tern::testing
