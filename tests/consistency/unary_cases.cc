// Consistency cases: the unary op family (math, cast, gradient helpers). Inputs of ops with
// kinks or restricted domains stay away from them; integer dtypes get their own ranges (u8 never
// sees negative values); "large" cases cross the fast kernels' parallel threshold.
#include <cmath>
#include <string>

#include "tests/consistency/op_case.h"

namespace tern::testing {
namespace {

const std::vector<DType> kFloats = {DType::kF32, DType::kF64, DType::kBF16, DType::kF16};
const std::vector<DType> kSigned = {DType::kF32, DType::kF64, DType::kBF16, DType::kF16,
                                    DType::kI8,  DType::kI32, DType::kI64};
const std::vector<DType> kFast = {DType::kF32, DType::kBF16};
const std::vector<DType> kIntegers = {DType::kI8, DType::kU8, DType::kI32, DType::kI64};

// A float-range case checked for gradients, and an integer case (values in [0, hi)) that is not.
std::vector<OpCase> numeric_cases(const char* op, double lo, double hi, double int_hi) {
  return {{.op = op, .inputs = {In({3, 4}, lo, hi)}, .dtypes = kSigned},
          {.op = op,
           .inputs = {In({7}, 0, int_hi)},
           .check_grad = false,
           .dtypes = kIntegers,
           .label = "integers"}};
}

// Casts from every dtype to `to`: signed/float/bool inputs in [-3, 3), u8 inputs in [0, 250).
std::vector<OpCase> cast_cases(DType to) {
  std::string name(dtype_name(to));
  ops::Attrs attrs{{"dtype", to}};
  return {{.op = "cast",
           .inputs = {In({3, 5}, -3, 3)},
           .attrs = attrs,
           .dtypes = {DType::kF32, DType::kF64, DType::kBF16, DType::kF16, DType::kI8, DType::kI32,
                      DType::kI64, DType::kBool},
           .label = "to_" + name},
          {.op = "cast",
           .inputs = {In({9}, 0, 250)},
           .attrs = attrs,
           .check_grad = false,
           .dtypes = {DType::kU8},
           .label = "u8_to_" + name}};
}

std::vector<OpCase> build_unary_cases() {
  std::vector<OpCase> cases = {
      {.op = "neg", .inputs = {In({3, 4}, -2, 2)}},
      {.op = "neg", .inputs = {In({}, -2, 2)}, .label = "scalar"},
      {.op = "exp", .inputs = {In({3, 4}, -2, 2)}},
      {.op = "exp",
       .inputs = {In({240, 160}, -10, 10)},
       .check_grad = false,
       .dtypes = kFast,
       .label = "large"},
      {.op = "log", .inputs = {In({3, 4}, 0.1, 3)}},
      {.op = "log", .inputs = {In({5}, 1e-3, 1e3)}, .label = "wide"},
      {.op = "log1p", .inputs = {In({3, 4}, -0.5, 2)}},
      {.op = "log1p", .inputs = {In({6}, -1e-4, 1e-4)}, .label = "tiny"},
      {.op = "sqrt", .inputs = {In({3, 4}, 0.1, 3)}},
      {.op = "rsqrt", .inputs = {In({3, 4}, 0.1, 3)}},
      {.op = "tanh", .inputs = {In({3, 4}, -3, 3)}},
      {.op = "tanh", .inputs = {In({8}, -0.5, 0.5)}, .label = "small"},
      {.op = "tanh", .inputs = {In({8}, -20, 20)}, .label = "saturating"},
      {.op = "sigmoid", .inputs = {In({3, 4}, -4, 4)}},
      {.op = "sigmoid", .inputs = {In({8}, -40, 40)}, .label = "saturating"},
      {.op = "gelu", .inputs = {In({3, 4}, -3, 3)}},
      {.op = "gelu",
       .inputs = {In({3, 4}, -3, 3)},
       .attrs = {{"approximate", true}},
       .label = "tanh"},
      {.op = "gelu",
       .inputs = {In({210, 160}, -6, 6)},
       .check_grad = false,
       .dtypes = kFast,
       .label = "large"},
      {.op = "softplus", .inputs = {In({3, 4}, -4, 4)}},
      {.op = "softplus", .inputs = {In({8}, -30, 30)}, .label = "wide"},
      {.op = "sin", .inputs = {In({3, 4}, -3, 3)}},
      {.op = "cos", .inputs = {In({3, 4}, -3, 3)}},

      // The gradient helpers (not differentiable themselves).
      {.op = "relu_grad", .inputs = {In({3, 4}), In({3, 4}, -2, 2)}},
      {.op = "gelu_grad", .inputs = {In({3, 4}), In({3, 4}, -3, 3)}},
      {.op = "gelu_grad",
       .inputs = {In({3, 4}), In({3, 4}, -3, 3)},
       .attrs = {{"approximate", true}},
       .label = "tanh"},
      {.op = "sigmoid_grad", .inputs = {In({3, 4}), In({3, 4}, 0, 1)}},
      {.op = "tanh_grad", .inputs = {In({3, 4}), In({3, 4}, -1, 1)}},

      // Casts with saturation, NaN and exact halves (f32 input, every integer target).
      {.op = "cast",
       .inputs = {Fixed(
           Tensor::from_values(DType::kF32, {8}, {-1e10, 1e10, NAN, 300, -300, 2.5, -2.5, 127.9}))},
       .attrs = {{"dtype", DType::kI8}},
       .check_grad = false,
       .label = "saturate_i8"},
      {.op = "cast",
       .inputs = {Fixed(
           Tensor::from_values(DType::kF32, {6}, {-1e10, 1e10, NAN, 300, -0.5, 255.5}))},
       .attrs = {{"dtype", DType::kU8}},
       .check_grad = false,
       .label = "saturate_u8"},
      {.op = "cast",
       .inputs = {Fixed(
           Tensor::from_values(DType::kF64, {5}, {-1e20, 1e20, NAN, 2147483647.5, -3.7}))},
       .attrs = {{"dtype", DType::kI32}},
       .check_grad = false,
       .label = "saturate_i32"},
      {.op = "cast",
       .inputs = {Fixed(Tensor::from_values(DType::kF64, {4}, {-1e20, 1e20, NAN, -9.5}))},
       .attrs = {{"dtype", DType::kI64}},
       .check_grad = false,
       .label = "saturate_i64"},
      {.op = "cast",
       .inputs = {In({230, 160}, -100, 100)},
       .attrs = {{"dtype", DType::kBF16}},
       .check_grad = false,
       .dtypes = {DType::kF32},
       .label = "large_f32_to_bf16"},
      {.op = "cast",
       .inputs = {In({230, 160}, -100, 100)},
       .attrs = {{"dtype", DType::kF32}},
       .check_grad = false,
       .dtypes = {DType::kBF16, DType::kF16},
       .label = "large_to_f32"},
  };
  for (auto& c : numeric_cases("abs", -2, 2, 200)) cases.push_back(std::move(c));
  for (auto& c : numeric_cases("square", -2, 2, 30)) cases.push_back(std::move(c));
  for (auto& c : numeric_cases("relu", -2, 2, 200)) cases.push_back(std::move(c));
  for (auto& c : numeric_cases("sign", -2, 2, 3)) cases.push_back(std::move(c));
  cases.push_back({.op = "relu",
                   .inputs = {In({250, 140}, -1, 1)},
                   .check_grad = false,
                   .dtypes = kFast,
                   .label = "large"});
  for (DType to : kAllDTypes) {
    for (auto& c : cast_cases(to)) cases.push_back(std::move(c));
  }
  return cases;
}

}  // namespace

TERN_OP_CASES(unary) {
  return build_unary_cases();
}

}  // namespace tern::testing
