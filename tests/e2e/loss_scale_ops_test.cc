// The ops behind dynamic loss scaling, on every kernel candidate: the fused optimizer updates with
// has_apply (apply = false leaves parameters and slots bitwise unchanged, apply = true is bitwise
// the update without the input), all_finite's answers (Inf / NaN anywhere, f16 overflow), and
// loss_scale_update's grow / shrink rule.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "tern/kernels/kernel.h"
#include "tern/runtime/eager.h"
#include "tern/runtime/runtime.h"
#include "tests/support/random_tensor.h"

namespace tern {
namespace {

using testing::random_tensor;
const double kInf = std::numeric_limits<double>::infinity();

// Names of every CPU candidate of `op` that claims `dtype`.
std::vector<std::string> kernels_of(std::string_view op, DType dtype) {
  runtime::initialize();
  std::vector<std::string> out;
  for (const kernels::KernelCandidate* c :
       kernels::KernelRegistry::global().candidates(op, DeviceType::kCPU)) {
    if (std::find(c->dtypes.begin(), c->dtypes.end(), dtype) != c->dtypes.end())
      out.push_back(c->name);
  }
  return out;
}

std::vector<Tensor> clone_all(const std::vector<Tensor>& ts) {
  std::vector<Tensor> out;
  for (const Tensor& t : ts) out.push_back(t.clone());
  return out;
}

struct UpdateCase {
  std::string op;
  ops::Attrs attrs;
  int hypers;  // leading scalar inputs (lr, step)
  int slots;   // slot lists after params and grads
};

// Inputs of `c` over parameters of sizes 70001 (chunked, parallel), 300 and 7.
std::vector<Tensor> update_inputs(const UpdateCase& c, DType d) {
  const std::vector<Shape> shapes = {Shape({70001}), Shape({300}), Shape({7})};
  std::vector<Tensor> in = {Tensor::scalar(d, 0.05)};
  if (c.hypers == 2) in.push_back(Tensor::scalar(DType::kI64, 3));
  uint64_t seed = 1;
  for (int list = 0; list < 2 + c.slots; ++list) {
    for (const Shape& s : shapes) in.push_back(random_tensor(d, s, seed++, 0.0, 0.5));
  }
  return in;
}

std::vector<UpdateCase> update_cases() {
  const int64_t n = 3;
  return {{"sgd_update", {{"num_params", n}}, 1, 0},
          {"sgd_update", {{"num_params", n}, {"momentum", 0.9}, {"nesterov", true}}, 1, 1},
          {"adam_update", {{"num_params", n}}, 2, 2},
          {"adam_update", {{"num_params", n}, {"amsgrad", true}}, 2, 3},
          {"adamw_update", {{"num_params", n}, {"weight_decay", 0.1}}, 2, 2},
          {"rmsprop_update", {{"num_params", n}}, 1, 1},
          {"rmsprop_update", {{"num_params", n}, {"momentum", 0.5}, {"centered", true}}, 1, 3}};
}

TEST(LossScaleOps, SkippedUpdateLeavesEverythingBitwiseUnchanged) {
  int runs = 0;
  std::vector<UpdateCase> cases = update_cases();
  for (size_t ci = 0; ci < cases.size(); ++ci) {
    const UpdateCase& c = cases[ci];
    for (DType d : {DType::kF32, DType::kF64}) {
      for (const std::string& kernel : kernels_of(c.op, d)) {
        SCOPED_TRACE(str_cat("case ", ci, " ", c.op, " ", dtype_name(d), " ", kernel));
        runtime::EagerOptions o;
        o.kernel = kernel;
        std::vector<Tensor> base = update_inputs(c, d);
        ops::Attrs gated = c.attrs;
        gated.set("has_apply", true);

        std::vector<Tensor> skip = clone_all(base);
        skip.push_back(Tensor::scalar(DType::kBool, 0));
        EXPECT_TRUE(runtime::eager_call(c.op, skip, gated, o).empty());
        for (size_t i = 0; i < base.size(); ++i)
          EXPECT_TRUE(bitwise_equal(skip[i], base[i])) << "input " << i << " changed";

        std::vector<Tensor> plain = clone_all(base), applied = clone_all(base);
        applied.push_back(Tensor::scalar(DType::kBool, 1));
        runtime::eager_call(c.op, plain, c.attrs, o);
        runtime::eager_call(c.op, applied, gated, o);
        bool moved = false;
        for (size_t i = 0; i < base.size(); ++i) {
          EXPECT_TRUE(bitwise_equal(applied[i], plain[i])) << "input " << i << " differs";
          moved = moved || !bitwise_equal(plain[i], base[i]);
        }
        EXPECT_TRUE(moved);
        ++runs;
      }
    }
  }
  EXPECT_GE(runs, 28);  // 7 cases x 2 dtypes x (ref + cpu_vec)
}

TEST(LossScaleOps, ApplyMustBeABoolScalar) {
  runtime::initialize();
  Tensor p = random_tensor(DType::kF32, Shape({4}), 1);
  Tensor g = random_tensor(DType::kF32, Shape({4}), 2);
  ops::Attrs a = {{"num_params", int64_t{1}}, {"has_apply", true}};
  Tensor lr = Tensor::scalar(DType::kF32, 0.1);
  EXPECT_TERN_ERROR(
      runtime::eager_call("sgd_update", {lr, p, g, Tensor::scalar(DType::kF32, 1)}, a),
      ErrorCode::kInvalidArgument, "apply (input 3)");
  EXPECT_TERN_ERROR(runtime::eager_call("sgd_update", {lr, p, g}, a), ErrorCode::kInvalidArgument,
                    "then apply");
}

// all_finite of {a, b} on `kernel`.
bool all_finite(const std::string& kernel, const Tensor& a, const Tensor& b) {
  runtime::EagerOptions o;
  o.kernel = kernel;
  std::vector<Tensor> out = runtime::eager_call("all_finite", {a, b}, {}, o);
  EXPECT_EQ(out.at(0).type().to_string(), TensorType(DType::kBool, Shape{}).to_string());
  return out.at(0).get(0) != 0;
}

TEST(LossScaleOps, AllFiniteFindsInfAndNanAnywhere) {
  for (DType d : {DType::kF32, DType::kF64, DType::kBF16, DType::kF16}) {
    std::vector<std::string> kernels = kernels_of("all_finite", d);
    EXPECT_GE(kernels.size(), 2u) << dtype_name(d);
    for (const std::string& kernel : kernels) {
      SCOPED_TRACE(str_cat(dtype_name(d), " ", kernel));
      Tensor small = random_tensor(d, Shape({5}), 3, -1e3, 1e3);
      Tensor big = random_tensor(d, Shape({100003}), 4);
      EXPECT_TRUE(all_finite(kernel, small, big));
      EXPECT_TRUE(all_finite(kernel, Tensor(d, {0}), small));
      for (int64_t at : {int64_t{0}, int64_t{4097}, int64_t{100002}}) {
        for (double bad : {kInf, -kInf, std::nan("")}) {
          Tensor b = big.clone();
          b.set(at, bad);
          EXPECT_FALSE(all_finite(kernel, small, b)) << bad << " at " << at;
        }
      }
      Tensor s = small.clone();
      s.set(2, std::nan(""));
      EXPECT_FALSE(all_finite(kernel, s, big));
    }
  }
  // A value past f16's range (65504) is Inf once cast to f16: the overflow loss scaling detects.
  Tensor x = Tensor::from_values(DType::kF32, {2}, {1.0, 70000.0});
  EXPECT_TRUE(all_finite("ref", x, x));
  EXPECT_FALSE(all_finite("ref", x.cast(DType::kF16), x.cast(DType::kF16)));
  EXPECT_FALSE(all_finite("vec", x.cast(DType::kF16), x.cast(DType::kF16)));
}

struct ScaleState {
  Tensor scale = Tensor::scalar(DType::kF32, 8);
  Tensor good = Tensor::scalar(DType::kI64, 0);
  void step(bool finite, int64_t interval = 3, double factor = 2) {
    EXPECT_TRUE(runtime::eager_call("loss_scale_update",
                                    {scale, good, Tensor::scalar(DType::kBool, finite ? 1 : 0)},
                                    {{"growth_interval", interval}, {"factor", factor}})
                    .empty());
  }
};

TEST(LossScaleOps, LossScaleUpdateGrowsAfterIntervalAndHalvesOnOverflow) {
  runtime::initialize();
  ScaleState s;
  s.step(true);
  s.step(true);
  EXPECT_EQ(s.scale.get(0), 8);
  EXPECT_EQ(s.good.get(0), 2);
  s.step(true);  // the third clean step doubles and resets the count
  EXPECT_EQ(s.scale.get(0), 16);
  EXPECT_EQ(s.good.get(0), 0);
  s.step(true);
  s.step(false);  // overflow: halve, reset
  EXPECT_EQ(s.scale.get(0), 8);
  EXPECT_EQ(s.good.get(0), 0);
  for (int i = 0; i < 6; ++i) s.step(false);
  EXPECT_EQ(s.scale.get(0), 1);  // floor at 1
  s.step(false, 3, 4);
  EXPECT_EQ(s.scale.get(0), 1);

  ScaleState top;  // growth that would overflow f32 keeps the scale
  top.scale.set(0, 3e38);
  top.step(true, 1);
  EXPECT_EQ(top.scale.get(0), static_cast<double>(3e38f));
  EXPECT_EQ(top.good.get(0), 0);

  EXPECT_TERN_ERROR(s.step(true, 0), ErrorCode::kInvalidArgument, "growth_interval must be >= 1");
  EXPECT_TERN_ERROR(s.step(true, 3, 1.0), ErrorCode::kInvalidArgument, "factor must be > 1");
  EXPECT_TERN_ERROR(
      runtime::eager_call(
          "loss_scale_update",
          {s.scale, Tensor::scalar(DType::kI32, 0), Tensor::scalar(DType::kBool, 1)}, {}),
      ErrorCode::kInvalidArgument, "good_steps (input 1) must be a scalar of dtype i64");
}

}  // namespace
}  // namespace tern
