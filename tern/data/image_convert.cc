// Per-image conversion steps shared by the convert_image_dataset directions.
#include "tern/data/image_convert.h"

#include <algorithm>
#include <cmath>

#include "tern/data/element.h"
#include "tern/data/image_codec.h"
#include "tern/data/image_ops.h"

namespace tern::data {

Tensor convert_image_u8(Tensor img, int channels, int64_t height, int64_t width) {
  const int64_t c = img.shape().dim(2);
  const int64_t pixels = img.shape().dim(0) * img.shape().dim(1);
  if (channels == 3 && c == 1) {
    Tensor rgb(DType::kU8, Shape{img.shape().dim(0), img.shape().dim(1), 3});
    const uint8_t* s = img.data<uint8_t>();
    uint8_t* d = rgb.data<uint8_t>();
    for (int64_t i = 0; i < pixels; ++i) d[3 * i] = d[3 * i + 1] = d[3 * i + 2] = s[i];
    img = rgb;
  } else if (channels == 1 && c >= 3) {
    Tensor gray(DType::kU8, Shape{img.shape().dim(0), img.shape().dim(1), 1});
    const uint8_t* s = img.data<uint8_t>();
    uint8_t* d = gray.data<uint8_t>();
    for (int64_t i = 0; i < pixels; ++i) {
      d[i] = static_cast<uint8_t>((s[c * i] * 299 + s[c * i + 1] * 587 + s[c * i + 2] * 114 + 500) /
                                  1000);
    }
    img = gray;
  }
  if (height > 0) {
    const Tensor f = resize_image(img, height, width);
    Tensor u(DType::kU8, f.shape());
    const float* s = f.data<float>();
    uint8_t* d = u.data<uint8_t>();
    for (int64_t i = 0; i < f.num_elements(); ++i)
      d[i] = static_cast<uint8_t>(std::clamp(std::lround(s[i]), 0L, 255L));
    img = u;
  }
  return img;
}

std::string encode_image_as(const Tensor& img, const std::string& format, int jpeg_quality) {
  if (format == "raw") return tensor_bytes(img);
  return encode_image(img, format == "jpeg" ? ImageFormat::kJpeg : ImageFormat::kPng, jpeg_quality);
}

Example image_example(const std::string& encoded, const std::string& format, int64_t h, int64_t w,
                      int64_t c) {
  Example ex;
  ex.features["image/encoded"] = Feature::bytes({encoded});
  ex.features["image/format"] = Feature::bytes({format});
  ex.features["image/height"] = Feature::int64s({h});
  ex.features["image/width"] = Feature::int64s({w});
  ex.features["image/channels"] = Feature::int64s({c});
  return ex;
}

std::string zero_padded(int64_t v, int64_t max_value) {
  const size_t width = std::to_string(std::max<int64_t>(max_value, 0)).size();
  std::string s = std::to_string(v);
  return std::string(width > s.size() ? width - s.size() : 0, '0') + s;
}

}  // namespace tern::data
