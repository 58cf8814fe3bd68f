// Consistency cases: the loss-scale ops. all_finite on finite inputs, on an Inf or a NaN (small,
// and past the fast kernel's parallel threshold); loss_scale_update growing and shrinking.
#include <cmath>
#include <limits>

#include "tests/consistency/op_case.h"

namespace tern::testing {
namespace {

// n values 0.5, with `bad` at index `at` (follows the case dtype).
InputSpec with_value(int64_t n, int64_t at, double bad) {
  std::vector<double> v(static_cast<size_t>(n), 0.5);
  v[static_cast<size_t>(at)] = bad;
  return Fixed(Tensor::from_values(DType::kF64, Shape({n}), v), true);
}

InputSpec scalar(DType d, double v) {
  return Fixed(Tensor::scalar(d, v));
}

const double kInf = std::numeric_limits<double>::infinity();
const double kNaN = std::numeric_limits<double>::quiet_NaN();

}  // namespace

TERN_OP_CASES(loss_scale) {
  return {
      {"all_finite", {In({3, 4}), In({5}, -100, 100), In({2, 2, 3})}, {}, false, {}, 0, "finite"},
      {"all_finite", {In({3, 4}), with_value(7, 3, kInf)}, {}, false, {}, 0, "inf"},
      {"all_finite", {with_value(5, 0, -kInf), In({2})}, {}, false, {}, 0, "neg-inf"},
      {"all_finite", {In({4}), with_value(6, 5, kNaN)}, {}, false, {}, 0, "nan"},
      {"all_finite", {In({70001}), with_value(70001, 70000, kNaN)}, {}, false, {}, 0, "large-nan"},
      {"all_finite", {In({70001}), In({300})}, {}, false, {}, 0, "large-finite"},
      {"loss_scale_update",
       {In({}, 1, 1000), scalar(DType::kI64, 2), scalar(DType::kBool, 1)},
       {{"growth_interval", int64_t{3}}},
       false,
       {},
       0,
       "grow"},
      {"loss_scale_update",
       {In({}, 1, 1000), scalar(DType::kI64, 0), scalar(DType::kBool, 1)},
       {},
       false,
       {},
       0,
       "count"},
      {"loss_scale_update",
       {In({}, 1, 1000), scalar(DType::kI64, 5), scalar(DType::kBool, 0)},
       {{"factor", 4.0}},
       false,
       {},
       0,
       "shrink"},
  };
}

}  // namespace tern::testing
