// Per-element image preprocessing as one fused map: optionally read and decode (component 0 is
// a file path or encoded bytes), then random crop, random flip, brightness / contrast jitter,
// resize and normalization, with randomness keyed per element so that the same seed gives the
// same images with 1 or N map threads, across runs and after an iterator restore.
//
//   auto ds = list_files({"/data/train/*/*.jpg"})
//                 ->...  // (path, label) elements
//   ds = augment_images(ds, {.source = ImageSource::kFilePath, .crop_height = 56, .crop_width = 56,
//                            .flip_left_right = true, .mean = {0.5f}, .stddev = {0.5f}},
//                       /*seed=*/42, {.num_parallel_calls = kAutotune})
//            ->batch(128);
#pragma once

#include <cstdint>
#include <vector>

#include "tern/data/dataset.h"
#include "tern/data/image_codec.h"
#include "tern/data/image_ops.h"

namespace tern::data {

// What component 0 of the input elements holds.
enum class ImageSource {
  kTensor,        // an image, u8 or f32 [H, W, C]
  kEncodedBytes,  // JPEG / PNG bytes as u8[n]
  kFilePath,      // a path as u8[n] (list_files, image folders)
};

struct ImageAugment {
  ImageSource source = ImageSource::kTensor;
  DecodeImageOptions decode;
  // Applied in this order; a zero size or default range skips the step.
  int64_t resize_height = 0, resize_width = 0;   // bilinear, before cropping
  int64_t crop_height = 0, crop_width = 0;       // random crop
  bool flip_left_right = false;                  // random, probability 1/2
  float max_brightness_delta = 0;                // delta uniform in [-d, d], [0, 1] units
  float contrast_lower = 1, contrast_upper = 1;  // factor uniform in [lower, upper]
  // Normalization (x / 255 for u8, then (x - mean) / stddev per channel) giving f32; with both
  // empty the image keeps the dtype the previous steps gave it (u8 stays u8 without jitter).
  std::vector<float> mean, stddev;
};

// Appends an i64 scalar component to every element: a key mixed from `seed`, the epoch (the
// iterator's epoch and the enclosing repeat's) and the element's position. The random image ops
// take it, so their draws depend on the seed and position only, never on thread timing.
DatasetPtr with_random_keys(DatasetPtr input, uint64_t seed);

// The augmented image for one element (key as with_random_keys gives). `what` names the element
// in decode errors (the path for kFilePath).
Tensor augment_image(const Tensor& component, const ImageAugment& augment, uint64_t key);

// with_random_keys(input, seed), then a map replacing component 0 by augment_image(...) and
// dropping the key. Other components (labels) pass through.
DatasetPtr augment_images(DatasetPtr input, ImageAugment augment, uint64_t seed,
                          MapOptions options = {});

}  // namespace tern::data
