// Tests for image ops: resize against TensorFlow 2's half-pixel results, crop / flip, dtype
// conversion, brightness / contrast / normalize, and keyed random ops.
#include "tern/data/image_ops.h"

#include <gtest/gtest.h>

#include <set>

#include "tern/base/error.h"

namespace tern::data {
namespace {

Tensor image(int64_t h, int64_t w, int64_t c, DType dtype = DType::kU8) {
  Tensor t(dtype, Shape{h, w, c});
  for (int64_t i = 0; i < t.num_elements(); ++i) t.set(i, static_cast<double>((i * 37) % 251));
  return t;
}

TEST(ImageOps, BilinearResizeMatchesTensorFlow) {
  // tf.image.resize([[0, 10], [20, 30]], [4, 4]) (bilinear, half-pixel centers).
  Tensor in = Tensor::from_values(DType::kU8, Shape{2, 2, 1}, {0, 10, 20, 30});
  Tensor out = resize_image(in, 4, 4);
  EXPECT_EQ(out.type().to_string(), "f32[4, 4, 1]");
  EXPECT_EQ(out.to_doubles(), (std::vector<double>{0, 2.5, 7.5, 10, 5, 7.5, 12.5, 15, 15, 17.5,
                                                   22.5, 25, 20, 22.5, 27.5, 30}));
  // Same size is the identity (as f32); downscaling by 2 averages 2x2 blocks.
  Tensor img = image(6, 8, 3);
  EXPECT_TRUE(allclose(resize_image(img, 6, 8), img.cast(DType::kF32)));
  Tensor half = resize_image(img, 3, 4);
  const double expected = (img.get(0) + img.get(3) + img.get(24) + img.get(27)) / 4;
  EXPECT_NEAR(half.get(0), expected, 1e-4);
}

TEST(ImageOps, NearestResizeKeepsDtype) {
  Tensor in = Tensor::from_values(DType::kU8, Shape{2, 2, 1}, {1, 2, 3, 4});
  EXPECT_EQ(resize_image(in, 4, 4, ResizeMethod::kNearest).to_doubles(),
            (std::vector<double>{1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4}));
  Tensor big = Tensor::from_values(DType::kU8, Shape{4, 4, 1},
                                   {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15});
  EXPECT_EQ(resize_image(big, 2, 2, ResizeMethod::kNearest).to_doubles(),
            (std::vector<double>{5, 7, 13, 15}));
}

TEST(ImageOps, CropAndFlip) {
  Tensor img = image(5, 6, 2);
  Tensor c = crop_image(img, 1, 2, 3, 4);
  EXPECT_EQ(c.type().to_string(), "u8[3, 4, 2]");
  EXPECT_EQ(c.get(0), img.get((1 * 6 + 2) * 2));
  EXPECT_EQ(c.get(2 * 8 + 3 * 2 + 1), img.get((3 * 6 + 5) * 2 + 1));
  EXPECT_THROW(crop_image(img, 3, 0, 3, 4), Error);
  Tensor f = flip_left_right(img);
  EXPECT_EQ(f.get(0), img.get(5 * 2));
  EXPECT_TRUE(bitwise_equal(flip_left_right(f), img));
  EXPECT_THROW(flip_left_right(Tensor(DType::kU8, Shape{4, 4})), Error);
}

TEST(ImageOps, ConvertDtypeFollowsTensorFlow) {
  Tensor u = Tensor::from_values(DType::kU8, Shape{1, 3, 1}, {0, 128, 255});
  Tensor f = convert_image_dtype(u, DType::kF32);
  EXPECT_NEAR(f.get(1), 128.0 / 255.0, 1e-7);
  EXPECT_TRUE(bitwise_equal(convert_image_dtype(f, DType::kU8), u));
  Tensor g = Tensor::from_values(DType::kF32, Shape{1, 4, 1}, {-1, 0.5, 1.0, 2.0});
  EXPECT_EQ(convert_image_dtype(g, DType::kU8).to_doubles(),
            (std::vector<double>{0, 127, 255, 255}));
  EXPECT_EQ(convert_image_dtype(g, DType::kF64).dtype(), DType::kF64);
  EXPECT_THROW(convert_image_dtype(g, DType::kI32), Error);
}

TEST(ImageOps, BrightnessContrastNormalize) {
  Tensor f = Tensor::from_values(DType::kF32, Shape{1, 2, 2}, {0.1, 0.2, 0.3, 0.6});
  EXPECT_TRUE(allclose(adjust_brightness(f, 0.25f),
                       Tensor::from_values(DType::kF32, Shape{1, 2, 2}, {0.35, 0.45, 0.55, 0.85})));
  // Per-channel means 0.2 and 0.4; factor 2 doubles the distance to them.
  EXPECT_TRUE(allclose(adjust_contrast(f, 2.0f),
                       Tensor::from_values(DType::kF32, Shape{1, 2, 2}, {0.0, 0.0, 0.4, 0.8}), 1e-5,
                       1e-6));
  Tensor u = Tensor::from_values(DType::kU8, Shape{1, 1, 3}, {0, 51, 255});
  EXPECT_EQ(adjust_brightness(u, 0.2f).to_doubles(), (std::vector<double>{51, 102, 255}));
  Tensor n = normalize_image(u, {0.5f}, {0.25f});
  EXPECT_TRUE(
      allclose(n, Tensor::from_values(DType::kF32, Shape{1, 1, 3}, {-2, -1.2, 2}), 1e-5, 1e-6));
  Tensor per = normalize_image(u, {0.0f, 0.1f, 0.2f}, {1.0f, 2.0f, 4.0f});
  EXPECT_NEAR(per.get(1), (0.2 - 0.1) / 2, 1e-6);
  EXPECT_THROW(normalize_image(u, {0.1f, 0.2f}, {1.0f}), Error);
  EXPECT_THROW(normalize_image(u, {0.1f}, {0.0f}), Error);
}

TEST(ImageOps, RandomOpsAreKeyed) {
  Tensor img = image(10, 12, 3);
  std::set<std::pair<int64_t, int64_t>> origins;
  int flips = 0;
  for (uint64_t key = 0; key < 1000; ++key) {
    EXPECT_TRUE(bitwise_equal(random_crop(img, 4, 5, key), random_crop(img, 4, 5, key)));
    auto o = random_crop_origin(10, 12, 4, 5, key);
    EXPECT_TRUE(o[0] >= 0 && o[0] <= 6 && o[1] >= 0 && o[1] <= 7);
    origins.insert({o[0], o[1]});
    Tensor f = random_flip_left_right(img, key);
    flips += bitwise_equal(f, img) ? 0 : 1;
    Tensor b = random_brightness(img.cast(DType::kF32), 0.5f, key);
    const double delta = b.get(0) - img.get(0);
    EXPECT_LE(std::abs(delta), 0.5 + 1e-6);
    EXPECT_TRUE(bitwise_equal(b, random_brightness(img.cast(DType::kF32), 0.5f, key)));
    EXPECT_NO_THROW(random_contrast(img, 0.5f, 1.5f, key));
  }
  EXPECT_EQ(origins.size(), 7u * 8u);  // every valid origin drawn at least once
  EXPECT_GT(flips, 430);
  EXPECT_LT(flips, 570);
  EXPECT_THROW(random_crop(img, 11, 5, 0), Error);
}

}  // namespace
}  // namespace tern::data
