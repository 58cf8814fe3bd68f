// IDX images and labels as model inputs: scaling, NHWC shapes, label range checks.
#include "tern/data/idx_images.h"

#include <gtest/gtest.h>

#include "tests/support/random_tensor.h"

namespace tern::data {
namespace {

TEST(IdxImages, U8ImagesBecomeUnitF32Nhwc) {
  Tensor raw(DType::kU8, Shape{2, 3, 4});
  for (int64_t i = 0; i < raw.num_elements(); ++i)
    raw.data<uint8_t>()[i] = static_cast<uint8_t>(i * 10);
  Tensor x = idx_images_to_f32(raw, "imgs");
  EXPECT_EQ(x.type().to_string(), "f32[2, 3, 4, 1]");
  EXPECT_FLOAT_EQ(x.data<float>()[5], 50.0f / 255.0f);
  Tensor rgb(DType::kF32, Shape{1, 2, 2, 3});
  for (int64_t i = 0; i < rgb.num_elements(); ++i) rgb.data<float>()[i] = 2.0f;
  Tensor y = idx_images_to_f32(rgb, "rgb");
  EXPECT_EQ(y.shape(), (Shape{1, 2, 2, 3}));
  EXPECT_FLOAT_EQ(y.data<float>()[11], 2.0f);  // only u8 is scaled
  EXPECT_TERN_ERROR(idx_images_to_f32(Tensor(DType::kU8, Shape{5}), "flat.idx"),
                    ErrorCode::kInvalidArgument, "image file 'flat.idx' has shape");
}

TEST(IdxImages, LabelsAreCheckedAgainstTheClassCount) {
  Tensor raw(DType::kU8, Shape{4});
  for (int64_t i = 0; i < 4; ++i) raw.data<uint8_t>()[i] = static_cast<uint8_t>(i);
  Tensor y = idx_labels_to_i64(raw, 4, "labels");
  EXPECT_EQ(y.dtype(), DType::kI64);
  EXPECT_EQ(y.get(3), 3);
  EXPECT_TERN_ERROR(idx_labels_to_i64(raw, 3, "labels.idx"), ErrorCode::kInvalidArgument,
                    "label file 'labels.idx': label 3 at index 3 is outside [0, 3)");
  EXPECT_TERN_ERROR(idx_labels_to_i64(Tensor(DType::kF32, Shape{2}), 3, "f.idx"),
                    ErrorCode::kInvalidArgument, "holds f32, not integers");
}

}  // namespace
}  // namespace tern::data
