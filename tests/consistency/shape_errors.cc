// Error paths of the reduce and shape families: bad attributes fail at inference naming the op and
// the shapes; out-of-range indices fail in the kernel naming the op and the index; none crash.
#include <gtest/gtest.h>

#include <cmath>

#include "tern/runtime/eager.h"
#include "tests/support/random_tensor.h"

namespace tern::testing {
namespace {

using Ints = std::vector<int64_t>;
constexpr ErrorCode kBad = ErrorCode::kInvalidArgument;

Tensor f32(Shape s) {
  return random_tensor(DType::kF32, s, 1);
}

TEST(ShapeErrors, ReshapeNamesBothShapes) {
  EXPECT_TERN_ERROR(runtime::eager_call("reshape", {f32({2, 3})}, {{"shape", Ints{4, 2}}}), kBad,
                    "cannot reshape [2, 3] (6 elements) to [4, 2] (8 elements)");
  EXPECT_TERN_ERROR(runtime::eager_call("reshape", {f32({2, 3})}, {{"shape", Ints{4, -1}}}), kBad,
                    "[4, -1]");
  EXPECT_TERN_ERROR(runtime::eager_call("reshape", {f32({2, 3})}, {{"shape", Ints{-1, -1}}}), kBad,
                    "at most one -1");
}

// matmul's out_dtype (mixed_bfloat16's f32 weight gradients): only "" or "f32", and "f32" only
// from bf16, f16 or f32 inputs.
TEST(ShapeErrors, MatmulOutDtype) {
  EXPECT_TERN_ERROR(runtime::eager_call("matmul", {f32({2, 3}), f32({3, 4})},
                                        {{"out_dtype", std::string("bf16")}}),
                    kBad, "out_dtype must be \"\" or \"f32\", got \"bf16\"");
  Tensor a = random_tensor(DType::kF64, {2, 3}, 1), b = random_tensor(DType::kF64, {3, 4}, 2);
  EXPECT_TERN_ERROR(runtime::eager_call("matmul", {a, b}, {{"out_dtype", std::string("f32")}}),
                    kBad, "out_dtype \"f32\" needs bf16, f16 or f32 inputs, got f64");
  Tensor lo = random_tensor(DType::kBF16, {2, 3}, 1), lw = random_tensor(DType::kBF16, {3, 4}, 2);
  EXPECT_EQ(runtime::eager_call1("matmul", {lo, lw}, {{"out_dtype", std::string("f32")}}).dtype(),
            DType::kF32);
}

TEST(ShapeErrors, BadAxes) {
  EXPECT_TERN_ERROR(runtime::eager_call("sum", {f32({2, 3})}, {{"axes", Ints{2}}}), kBad,
                    "axis 2 is out of range for rank 2");
  EXPECT_TERN_ERROR(runtime::eager_call("argmax", {f32({2, 3})}, {{"axis", int64_t{-3}}}), kBad,
                    "op 'argmax'");
  EXPECT_TERN_ERROR(
      runtime::eager_call("concat", {f32({2, 3}), f32({3, 3})}, {{"axis", int64_t{1}}}), kBad,
      "does not match");
  EXPECT_TERN_ERROR(runtime::eager_call("expand_dims", {f32({2, 3})}, {{"axis", int64_t{3}}}), kBad,
                    "axis 3 is out of range");
  EXPECT_TERN_ERROR(runtime::eager_call("squeeze", {f32({2, 1})}, {{"axes", Ints{0}}}), kBad,
                    "cannot squeeze axis 0 of size 2");
  EXPECT_TERN_ERROR(runtime::eager_call("transpose", {f32({2, 3})}, {{"perm", Ints{0, 0}}}), kBad,
                    "not a permutation");
  EXPECT_TERN_ERROR(runtime::eager_call("max", {f32({0, 3})}, {{"axes", Ints{0}}}), kBad, "size 0");
}

TEST(ShapeErrors, BadSizes) {
  EXPECT_TERN_ERROR(
      runtime::eager_call("split", {f32({2, 6})}, {{"axis", int64_t{1}}, {"sizes", Ints{2, 3}}}),
      kBad, "do not add up to dim 6");
  EXPECT_TERN_ERROR(
      runtime::eager_call("slice", {f32({4, 5})}, {{"begin", Ints{1, 2}}, {"size", Ints{4, 1}}}),
      kBad, "exceeds dim 0");
  EXPECT_TERN_ERROR(
      runtime::eager_call("strided_slice", {f32({4})},
                          {{"begin", Ints{0}}, {"end", Ints{4}}, {"strides", Ints{0}}}),
      kBad, "stride 0");
  EXPECT_TERN_ERROR(runtime::eager_call("broadcast_to", {f32({2, 3})}, {{"shape", Ints{4, 3}}}),
                    kBad, "cannot broadcast [2, 3] to [4, 3]");
  EXPECT_TERN_ERROR(runtime::eager_call("pad", {f32({2})}, {{"paddings", Ints{-1, 0}}}), kBad,
                    "must be >= 0");
}

TEST(ShapeErrors, GatherIndexOutOfRange) {
  Tensor idx = Tensor::from_values(DType::kI64, {3}, {0, 7, 1});
  EXPECT_TERN_ERROR(runtime::eager_call("gather", {f32({5, 2}), idx}), kBad,
                    "op 'gather': index 7 at position 1");
  Tensor neg = Tensor::from_values(DType::kI32, {1}, {-1});
  EXPECT_TERN_ERROR(runtime::eager_call("gather", {f32({5, 2}), neg}, {{"axis", int64_t{1}}}), kBad,
                    "index -1");
  EXPECT_TERN_ERROR(runtime::eager_call("gather", {f32({5, 2}), f32({2})}), kBad,
                    "must be i32 or i64");
}

TEST(ShapeErrors, ScatterAddIndexOutOfRange) {
  Tensor idx = Tensor::from_values(DType::kI64, {2}, {0, 4});
  EXPECT_TERN_ERROR(runtime::eager_call("scatter_add", {idx, f32({2, 3})}, {{"shape", Ints{4, 3}}}),
                    kBad,
                    "op 'scatter_add': index 4 at position 1 of indices [2] is out of range [0, 4) "
                    "for axis 0 of output shape [4, 3]");
  // i32 indices, a negative one, through the vectorized f32 kernel (the same check as ref's).
  Tensor neg = Tensor::from_values(DType::kI32, {3}, {1, 0, -1});
  EXPECT_TERN_ERROR(
      runtime::eager_call("scatter_add", {neg, f32({3, 200})}, {{"shape", Ints{2, 200}}}), kBad,
      "index -1 at position 2 of indices [3] is out of range [0, 2)");
  EXPECT_TERN_ERROR(runtime::eager_call("scatter_add", {idx, f32({2, 2})}, {{"shape", Ints{4, 3}}}),
                    kBad, "updates must have shape");
}

TEST(ShapeRef, StridedSliceMatchesNumPy) {
  Tensor x = Tensor::from_values(DType::kF32, {6}, {0, 1, 2, 3, 4, 5});
  auto ss = [&](Ints b, Ints e, Ints s) {
    return runtime::eager_call1("strided_slice", {x}, {{"begin", b}, {"end", e}, {"strides", s}})
        .to_doubles();
  };
  EXPECT_EQ(ss({5}, {-7}, {-1}), (std::vector<double>{5, 4, 3, 2, 1, 0}));  // x[::-1]
  EXPECT_EQ(ss({-2}, {0}, {-2}), (std::vector<double>{4, 2}));              // x[-2:0:-2]
  EXPECT_EQ(ss({1}, {100}, {2}), (std::vector<double>{1, 3, 5}));           // x[1:100:2]
  EXPECT_EQ(ss({4}, {2}, {1}), (std::vector<double>{}));                    // x[4:2]
}

TEST(ShapeRef, OneHotAndScatterAdd) {
  Tensor idx = Tensor::from_values(DType::kI32, {3}, {2, -1, 0});
  EXPECT_EQ(runtime::eager_call1("one_hot", {idx}, {{"depth", int64_t{3}}}).to_doubles(),
            (std::vector<double>{0, 0, 1, 0, 0, 0, 1, 0, 0}));
  Tensor rows = Tensor::from_values(DType::kI64, {3}, {1, 0, 1});
  Tensor upd = Tensor::from_values(DType::kF32, {3, 2}, {1, 2, 3, 4, 5, 6});
  EXPECT_EQ(runtime::eager_call1("scatter_add", {rows, upd}, {{"shape", Ints{3, 2}}}).to_doubles(),
            (std::vector<double>{3, 4, 6, 8, 0, 0}));
}

}  // namespace
}  // namespace tern::testing
