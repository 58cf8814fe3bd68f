// The op consistency harness: the case table. Every registered op needs at least one case; a case
// names the op, its inputs (shapes, value ranges, fixed dtypes for index/mask inputs) and attrs.
// The harness then (1) runs every kernel candidate against `ref` for every dtype the op claims and
// (2) checks the gradient rule against central finite differences in f64.
//
// Adding an op adds one line to a TERN_OP_CASES block:
//   {"relu", {In({3, 4}, -1, 1)}},
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "tern/ops/attrs.h"
#include "tern/tensor/tensor.h"

namespace tern::testing {

struct InputSpec {
  Shape shape;
  double lo = -1.0;
  double hi = 1.0;
  std::optional<DType> dtype;   // fixed dtype (indices, masks); nullopt = the case's dtype
  bool integral = false;        // values are integers in [lo, hi)
  std::optional<Tensor> value;  // a fixed value instead of random (cast to the input dtype)
  // Flat element indices set to NaN after the draw (floating dtypes only): NaN must come out of
  // every kernel exactly where it comes out of ref.
  std::vector<int64_t> nan_at = {};
};

// A float input following the case dtype, uniform in [lo, hi).
inline InputSpec In(Shape shape, double lo = -1.0, double hi = 1.0) {
  return InputSpec{std::move(shape), lo, hi, std::nullopt, false, std::nullopt};
}
// A float input as In() with NaN at the flat indices `at`.
inline InputSpec WithNaN(Shape shape, std::vector<int64_t> at, double lo = -1.0, double hi = 1.0) {
  InputSpec s = In(std::move(shape), lo, hi);
  s.nan_at = std::move(at);
  return s;
}
// An integer input with a fixed dtype, uniform in [lo, hi).
inline InputSpec Idx(Shape shape, int64_t lo, int64_t hi, DType dtype = DType::kI64) {
  return InputSpec{std::move(shape), static_cast<double>(lo), static_cast<double>(hi), dtype, true,
                   std::nullopt};
}
// An input with a fixed value (its dtype kept unless `follow_case_dtype`).
inline InputSpec Fixed(const Tensor& value, bool follow_case_dtype = false) {
  return InputSpec{value.shape(),
                   0,
                   0,
                   follow_case_dtype ? std::nullopt : std::optional<DType>(value.dtype()),
                   false,
                   value};
}

struct OpCase {
  std::string op;
  std::vector<InputSpec> inputs;
  ops::Attrs attrs = {};
  bool check_grad = true;  // false: the op has no gradient (or this case should not check it)
  std::vector<DType> dtypes = {};  // empty: every dtype the op claims
  double grad_tolerance = 1e-5;    // relative+absolute tolerance of the f64 gradient check
  std::string label = "";
  // A fast kernel may give NaN where ref has a number (oneDNN's Winograd convolution mixes a
  // whole tile of inputs, so one NaN input spreads over its output tile), never a number where ref
  // has NaN. Only for cases with NaN inputs.
  bool nan_may_spread = false;
  // Inputs the kernels may treat as constant (a served model's filters): for kernels that take
  // only those (conv_small_image_cpu.cc). Empty: none. ref runs the case either way.
  std::vector<bool> constant_inputs = {};
  // bf16 results are compared with the largest |ref| rather than each element's: kernels that
  // multiply bf16 roundings of sums of inputs (tern's F(2x2, 3x3) Winograd, whose bf16 products
  // are up to 2^-8 off) err by a fraction of the terms' scale, which an output near zero after
  // cancellation does not shrink.
  bool bf16_error_of_scale = false;
};

// Registers cases at static-init time (the harness binary links every case file).
struct OpCaseRegistrar {
  explicit OpCaseRegistrar(std::vector<OpCase> (*fn)());
};
std::vector<OpCase> all_op_cases();

}  // namespace tern::testing

#define TERN_OP_CASES_CONCAT_INNER(a, b) a##b
#define TERN_OP_CASES_CONCAT(a, b) TERN_OP_CASES_CONCAT_INNER(a, b)
// Usage: TERN_OP_CASES(matmul) { return { {"matmul", {In({2, 3}), In({3, 4})}}, }; }
#define TERN_OP_CASES(family)                                      \
  static std::vector<::tern::testing::OpCase> family##_op_cases(); \
  static ::tern::testing::OpCaseRegistrar TERN_OP_CASES_CONCAT(    \
      family, _op_case_registrar)(&family##_op_cases);             \
  static std::vector<::tern::testing::OpCase> family##_op_cases()
