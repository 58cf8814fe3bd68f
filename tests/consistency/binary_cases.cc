// Consistency cases: the binary op family. Each arithmetic op runs on the broadcast patterns the
// fast kernels take (same shape, scalar, trailing row, column, outer) and one they decline
// ([2, 3, 4] with [3, 1]); integer dtypes get non-negative ranges so u8 is valid; divisors, pow
// bases and maximum/minimum ties stay away from their kinks.
#include <cmath>

#include "tests/consistency/op_case.h"

namespace tern::testing {
namespace {

const std::vector<DType> kFloats = {DType::kF32, DType::kF64, DType::kBF16, DType::kF16};
const std::vector<DType> kIntegers = {DType::kI8, DType::kU8, DType::kI32, DType::kI64};
const std::vector<DType> kFast = {DType::kF32, DType::kBF16};
const std::vector<DType> kNoU8 = {DType::kF32, DType::kF64, DType::kBF16, DType::kF16,
                                  DType::kI8,  DType::kI32, DType::kI64,  DType::kBool};

// The broadcast patterns, for an op on floats with b drawn from [blo, bhi).
std::vector<OpCase> float_patterns(const char* op, double blo, double bhi) {
  auto A = [](Shape s) { return In(std::move(s), -2, 2); };
  auto B = [&](Shape s) { return In(std::move(s), blo, bhi); };
  return {
      {.op = op, .inputs = {A({3, 4}), B({3, 4})}, .dtypes = kFloats, .label = "same"},
      {.op = op, .inputs = {A({3, 1}), B({4})}, .dtypes = kFloats, .label = "3x1_4"},
      {.op = op, .inputs = {A({}), B({2, 3})}, .dtypes = kFloats, .label = "scalar_a"},
      {.op = op, .inputs = {A({2, 3}), B({1})}, .dtypes = kFloats, .label = "scalar_b"},
      {.op = op, .inputs = {A({2, 3, 4}), B({4})}, .dtypes = kFloats, .label = "row"},
      {.op = op, .inputs = {A({5, 1}), B({5, 3})}, .dtypes = kFloats, .label = "column"},
      {.op = op, .inputs = {A({2, 3, 4}), B({3, 1})}, .dtypes = kFloats, .label = "generic"},
      {.op = op, .inputs = {A({}), B({})}, .dtypes = kFloats, .label = "scalars"},
      {.op = op,
       .inputs = {A({256, 160}), B({256, 160})},
       .check_grad = false,
       .dtypes = kFast,
       .label = "large"},
      {.op = op,
       .inputs = {A({300, 128}), B({128})},
       .check_grad = false,
       .dtypes = kFast,
       .label = "large_row"},
      {.op = op,
       .inputs = {A({1}), B({200, 190})},
       .check_grad = false,
       .dtypes = kFast,
       .label = "large_scalar"},
  };
}

std::vector<OpCase> integer_case(const char* op, double hi) {
  return {{.op = op,
           .inputs = {In({3, 4}, 0, hi), In({4}, 0, hi)},
           .check_grad = false,
           .dtypes = kIntegers,
           .label = "integers"}};
}

// Predicates on every dtype: random values (u8 separately, non-negative) and exact ties.
std::vector<OpCase> predicate_cases(const char* op) {
  Tensor a = Tensor::from_values(DType::kF64, {5}, {1, 2, 3, 4, NAN});
  Tensor b = Tensor::from_values(DType::kF64, {5}, {1, 0, 3, 5, NAN});
  return {{.op = op, .inputs = {In({3, 4}, -2, 2), In({4}, -2, 2)}, .dtypes = kNoU8},
          {.op = op,
           .inputs = {In({3, 1}, 0, 4), In({5}, 0, 4)},
           .dtypes = {DType::kU8},
           .label = "u8"},
          {.op = op,
           .inputs = {Fixed(a, true), Fixed(b, true)},
           .dtypes = kFloats,
           .label = "ties_and_nan"},
          {.op = op,
           .inputs = {In({300, 128}, -3, 3), In({128}, -3, 3)},
           .dtypes = {DType::kF32, DType::kBF16, DType::kI32},
           .label = "large"}};
}

void append(std::vector<OpCase>& to, std::vector<OpCase> from) {
  for (auto& c : from) to.push_back(std::move(c));
}

std::vector<OpCase> build_binary_cases() {
  std::vector<OpCase> cases;
  append(cases, float_patterns("add", -2, 2));
  append(cases, float_patterns("sub", -2, 2));
  append(cases, float_patterns("mul", -2, 2));
  append(cases, float_patterns("div", 0.5, 2));
  append(cases, float_patterns("maximum", -2, 2));
  append(cases, float_patterns("minimum", -2, 2));
  append(cases, integer_case("add", 100));  // i8 wraps past 127
  append(cases, integer_case("sub", 100));
  append(cases, integer_case("mul", 20));
  append(cases, integer_case("maximum", 100));
  append(cases, integer_case("minimum", 100));
  cases.push_back({.op = "div", .inputs = {In({3, 4}), In({4}, -2, -0.5)}, .label = "negative"});
  cases.push_back({.op = "pow", .inputs = {In({3, 4}, 0.5, 2), In({3, 4}, -2, 2)}});
  cases.push_back({.op = "pow", .inputs = {In({3, 1}, 0.5, 2), In({4}, -2, 2)}, .label = "3x1_4"});
  cases.push_back({.op = "pow", .inputs = {In({}, 0.5, 2), In({2, 3}, -2, 2)}, .label = "scalar"});
  cases.push_back({.op = "pow",
                   .inputs = {In({2, 3}, -2, -0.5),
                              Fixed(Tensor::from_values(DType::kF64, {3}, {2, 3, -1}), true)},
                   .label = "negative_base"});
  cases.push_back({.op = "maximum",
                   .inputs = {Fixed(Tensor::from_values(DType::kF64, {4}, {1, NAN, 3, -0.0}), true),
                              Fixed(Tensor::from_values(DType::kF64, {4}, {2, 1, NAN, 0.0}), true)},
                   .dtypes = kFloats,
                   .label = "nan"});
  cases.push_back({.op = "minimum",
                   .inputs = {Fixed(Tensor::from_values(DType::kF64, {4}, {1, NAN, 3, -0.0}), true),
                              Fixed(Tensor::from_values(DType::kF64, {4}, {2, 1, NAN, 0.0}), true)},
                   .dtypes = kFloats,
                   .label = "nan"});

  for (const char* op : {"equal", "not_equal", "less", "less_equal", "greater", "greater_equal"}) {
    append(cases, predicate_cases(op));
  }
  cases.push_back({.op = "logical_and", .inputs = {In({3, 4}), In({4})}});
  cases.push_back({.op = "logical_or", .inputs = {In({3, 1}), In({4})}});
  cases.push_back({.op = "logical_not", .inputs = {In({3, 4})}});

  auto cond = [](Shape s) { return Idx(std::move(s), 0, 2, DType::kBool); };
  cases.push_back({.op = "where", .inputs = {cond({3, 4}), In({3, 4}, 0, 5), In({3, 4}, 0, 5)}});
  cases.push_back({.op = "where",
                   .inputs = {cond({3, 1}), In({4}, 0, 5), In({}, 0, 5)},
                   .label = "broadcast_all"});
  cases.push_back({.op = "where",
                   .inputs = {cond({2, 3, 4}), In({3, 1}, 0, 5), In({4}, 0, 5)},
                   .label = "generic"});
  cases.push_back({.op = "where",
                   .inputs = {cond({3, 4}), In({3, 4}, 0, 5), In({}, 0, 5)},
                   .label = "scalar_b"});
  cases.push_back({.op = "where",
                   .inputs = {cond({230, 150}), In({230, 150}, 0, 5), In({150}, 0, 5)},
                   .check_grad = false,
                   .label = "large"});
  return cases;
}

}  // namespace

TERN_OP_CASES(binary) {
  return build_binary_cases();
}

}  // namespace tern::testing
