// The per-image steps of convert_image_dataset (convert.h): channel conversion and resizing of u8
// images, encoding as a jpeg / png / raw file body, and the TF-slim tf.train.Example of an encoded
// image (image/encoded, image/format, image/height, image/width, image/channels).
#pragma once

#include <cstdint>
#include <string>

#include "tern/data/example_proto.h"
#include "tern/tensor/tensor.h"

namespace tern::data {

// u8 [H, W, C] -> u8 [height, width, channels]: gray replicated to RGB (channels 3 from 1), RGB to
// gray by luma (channels 1 from 3 or 4), then a bilinear resize rounded back to u8. 0 keeps the
// channels or the size.
Tensor convert_image_u8(Tensor image, int channels, int64_t height, int64_t width);

// `image` as a file body: "jpeg" (at jpeg_quality), "png", or "raw" (the pixel bytes).
std::string encode_image_as(const Tensor& image, const std::string& format, int jpeg_quality);

Example image_example(const std::string& encoded, const std::string& format, int64_t height,
                      int64_t width, int64_t channels);

// `value` in decimal, zero-padded to the width of `max_value` (file names that sort in order).
std::string zero_padded(int64_t value, int64_t max_value);

}  // namespace tern::data
