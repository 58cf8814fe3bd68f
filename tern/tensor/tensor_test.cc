// Tests for DType, Shape and Tensor.
#include "tern/tensor/tensor.h"

#include <gtest/gtest.h>

#include <cmath>

#include "tests/support/random_tensor.h"

namespace tern {
namespace {

TEST(DType, NamesRoundTrip) {
  for (DType d : kAllDTypes) EXPECT_EQ(parse_dtype(dtype_name(d)), d);
  EXPECT_EQ(parse_dtype("bfloat16"), DType::kBF16);
  EXPECT_TERN_ERROR(parse_dtype("f33"), ErrorCode::kInvalidArgument, "f33");
}

TEST(DType, HalfConversions) {
  EXPECT_EQ(static_cast<float>(bfloat16(1.0f)), 1.0f);
  EXPECT_EQ(bfloat16(1.0f).bits, 0x3f80);
  // Round to nearest even: 1 + 2^-8 is exactly halfway between two bf16 values.
  EXPECT_EQ(static_cast<float>(bfloat16(1.0f + 1.0f / 256)), 1.0f);
  EXPECT_EQ(float16(1.0f).bits, 0x3c00);
  EXPECT_EQ(float16(65504.0f).bits, 0x7bff);
  EXPECT_EQ(float16(1e6f).bits, 0x7c00);                        // overflow to inf
  EXPECT_EQ(float16::to_float(0x0001), std::ldexp(1.0f, -24));  // smallest subnormal
  EXPECT_EQ(float16(std::ldexp(1.0f, -24)).bits, 0x0001);
  EXPECT_TRUE(std::isnan(float16::to_float(float16(NAN).bits)));
  for (int i = 0; i < 0x7c00; i += 7) {  // every finite positive half round-trips
    EXPECT_EQ(float16(float16::to_float(static_cast<uint16_t>(i))).bits, i);
  }
}

TEST(Shape, CheckedSizesAndBroadcast) {
  Shape s{2, 3, 4};
  EXPECT_EQ(s.num_elements(), 24);
  EXPECT_EQ(s.strides(), (std::vector<int64_t>{12, 4, 1}));
  EXPECT_EQ(broadcast_shapes(Shape{3, 1}, Shape{4}), (Shape{3, 4}));
  EXPECT_TERN_ERROR(broadcast_shapes(Shape{3}, Shape{4}), ErrorCode::kInvalidArgument,
                    "[3] and [4]");
  EXPECT_TERN_ERROR(Shape({int64_t{1} << 40, int64_t{1} << 40}), ErrorCode::kInvalidArgument,
                    "overflows");
  EXPECT_TERN_ERROR(Shape({2, -1}), ErrorCode::kInvalidArgument, "negative");
  EXPECT_EQ(s.normalize_axis(-1), 2);
  EXPECT_TERN_ERROR(s.normalize_axis(3), ErrorCode::kInvalidArgument, "out of range");
}

TEST(Tensor, ViewsShareStorage) {
  Tensor t = Tensor::from_values(DType::kF32, {2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor r = t.reshape({3, 2});
  r.set(0, 10);
  EXPECT_EQ(t.get(0), 10);
  Tensor row = t.slice_rows(1, 2);
  EXPECT_EQ(row.shape(), (Shape{1, 3}));
  EXPECT_EQ(row.get(0), 4);
  Tensor c = t.clone();
  c.set(1, 99);
  EXPECT_EQ(t.get(1), 2);
  EXPECT_TERN_ERROR(t.reshape({4}), ErrorCode::kInvalidArgument, "cannot reshape");
  EXPECT_TERN_ERROR(t.data<double>(), ErrorCode::kInvalidArgument, "accessed as f64");
}

TEST(Tensor, CastsAndPrinting) {
  Tensor t = Tensor::from_values(DType::kF32, {3}, {1.5, -2.5, 300});
  EXPECT_EQ(t.cast(DType::kI32).to_doubles(), (std::vector<double>{1, -2, 300}));
  EXPECT_EQ(t.cast(DType::kBool).to_doubles(), (std::vector<double>{1, 1, 1}));
  EXPECT_EQ(t.cast(DType::kBF16).to_doubles(), (std::vector<double>{1.5, -2.5, 300}));
  EXPECT_EQ(t.to_string(), "Tensor(f32[3], [1.5, -2.5, 300])");
  EXPECT_TRUE(allclose(t, t.clone()));
  EXPECT_TRUE(bitwise_equal(t, t.clone()));
}

}  // namespace
}  // namespace tern
