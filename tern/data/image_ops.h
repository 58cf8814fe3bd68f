// Image ops on single images, u8 or f32 [H, W, C] (the per-element transforms of an input
// pipeline; NHWC without the N). Random ops take a 64-bit `key`, one per element (see
// image_augment.h's with_random_keys): the same key gives the same crop / flip / jitter on any
// thread, so results do not depend on how many map threads run.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "tern/tensor/tensor.h"

namespace tern::data {

enum class ResizeMethod { kBilinear, kNearest };

// Half-pixel centers (TensorFlow 2 / torchvision, no antialiasing). Bilinear gives f32 (values
// in the input's range); nearest keeps the dtype.
Tensor resize_image(const Tensor& image, int64_t height, int64_t width,
                    ResizeMethod method = ResizeMethod::kBilinear);

// Rows [top, top + height), columns [left, left + width); InvalidArgument if out of bounds.
Tensor crop_image(const Tensor& image, int64_t top, int64_t left, int64_t height, int64_t width);
Tensor flip_left_right(const Tensor& image);

// TensorFlow's convert_image_dtype: u8 <-> floating scales between [0, 255] and [0, 1] (float
// to u8 rounds and saturates); floating <-> floating casts.
Tensor convert_image_dtype(const Tensor& image, DType dtype);
// image + delta in [0, 1] float units (u8 images are converted there and back, saturating).
Tensor adjust_brightness(const Tensor& image, float delta);
// (x - mean) * factor + mean per channel, mean over the image (u8 round trips as above).
Tensor adjust_contrast(const Tensor& image, float factor);
// f32 (x - mean[c]) / stddev[c]; u8 input is scaled to [0, 1] first (torchvision's ToTensor +
// Normalize). One value of mean / stddev applies to every channel.
Tensor normalize_image(const Tensor& image, const std::vector<float>& mean,
                       const std::vector<float>& stddev);

// --- random ops (one draw per op from Philox(key), each op on its own counter) ---
// Top-left corner uniform over the valid positions.
Tensor random_crop(const Tensor& image, int64_t height, int64_t width, uint64_t key);
Tensor random_flip_left_right(const Tensor& image, uint64_t key);
// delta uniform in [-max_delta, max_delta].
Tensor random_brightness(const Tensor& image, float max_delta, uint64_t key);
// factor uniform in [lower, upper].
Tensor random_contrast(const Tensor& image, float lower, float upper, uint64_t key);

// The uniform draws behind the random ops, for callers that fuse them (image_augment.cc).
enum class RandomOpCounter : uint64_t { kCrop = 1, kFlip = 2, kBrightness = 3, kContrast = 4 };
// Four uniform floats in [0, 1) for (key, op).
std::array<float, 4> random_uniforms(uint64_t key, RandomOpCounter op);
// A crop origin (top, left) for an image of h x w.
std::array<int64_t, 2> random_crop_origin(int64_t h, int64_t w, int64_t crop_h, int64_t crop_w,
                                          uint64_t key);

// Image height, width and channels; InvalidArgument naming `what` unless `image` is a rank-3
// tensor with at least one row, column and channel.
struct ImageDims {
  int64_t height, width, channels;
};
ImageDims image_dims(const Tensor& image, const char* what);

}  // namespace tern::data
