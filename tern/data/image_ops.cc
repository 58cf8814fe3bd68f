// Image ops: resize, crop, flip, dtype conversion, brightness / contrast, normalization, and
// their random variants keyed by a per-element Philox key.
#include "tern/data/image_ops.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "tern/base/error.h"
#include "tern/base/philox.h"

namespace tern::data {
namespace {

// f32 copy of an image (u8 and other dtypes cast, values unscaled).
Tensor as_f32(const Tensor& image) {
  return image.dtype() == DType::kF32 ? image : image.cast(DType::kF32);
}

template <typename T>
void resize_bilinear(const T* src, int64_t h, int64_t w, int64_t c, float* dst, int64_t oh,
                     int64_t ow) {
  const float sy = static_cast<float>(h) / static_cast<float>(oh);
  const float sx = static_cast<float>(w) / static_cast<float>(ow);
  std::vector<int64_t> x0(static_cast<size_t>(ow)), x1(static_cast<size_t>(ow));
  std::vector<float> wx(static_cast<size_t>(ow));
  for (int64_t x = 0; x < ow; ++x) {
    const float in = std::max((static_cast<float>(x) + 0.5f) * sx - 0.5f, 0.0f);
    const int64_t lo = std::min(static_cast<int64_t>(in), w - 1);
    x0[static_cast<size_t>(x)] = lo * c;
    x1[static_cast<size_t>(x)] = std::min(lo + 1, w - 1) * c;
    wx[static_cast<size_t>(x)] = in - static_cast<float>(lo);
  }
  for (int64_t y = 0; y < oh; ++y) {
    const float in = std::max((static_cast<float>(y) + 0.5f) * sy - 0.5f, 0.0f);
    const int64_t lo = std::min(static_cast<int64_t>(in), h - 1);
    const int64_t hi = std::min(lo + 1, h - 1);
    const float wy = in - static_cast<float>(lo);
    const T* r0 = src + lo * w * c;
    const T* r1 = src + hi * w * c;
    float* out = dst + y * ow * c;
    for (int64_t x = 0; x < ow; ++x) {
      const size_t xi = static_cast<size_t>(x);
      const float fx = wx[xi];
      for (int64_t k = 0; k < c; ++k) {
        const float top =
            static_cast<float>(r0[x0[xi] + k]) +
            (static_cast<float>(r0[x1[xi] + k]) - static_cast<float>(r0[x0[xi] + k])) * fx;
        const float bot =
            static_cast<float>(r1[x0[xi] + k]) +
            (static_cast<float>(r1[x1[xi] + k]) - static_cast<float>(r1[x0[xi] + k])) * fx;
        out[x * c + k] = top + (bot - top) * wy;
      }
    }
  }
}

// u8 -> f32 in [0, 1], apply `fn` in place, -> u8 saturating; float images directly.
template <typename Fn>
Tensor in_unit_range(const Tensor& image, Fn&& fn) {
  if (image.dtype() == DType::kU8) {
    Tensor f = convert_image_dtype(image, DType::kF32);
    fn(f);
    return convert_image_dtype(f, DType::kU8);
  }
  Tensor f = image.dtype() == DType::kF32 ? image.clone() : image.cast(DType::kF32);
  fn(f);
  return f.dtype() == image.dtype() ? f : f.cast(image.dtype());
}

}  // namespace

ImageDims image_dims(const Tensor& image, const char* what) {
  TERN_CHECK_ARG(image.defined() && image.rank() == 3, what, ": expected an image [H, W, C], got ",
                 image.defined() ? image.type().to_string() : std::string("undefined"));
  const ImageDims d{image.shape().dim(0), image.shape().dim(1), image.shape().dim(2)};
  TERN_CHECK_ARG(d.height > 0 && d.width > 0 && d.channels > 0, what, ": empty image ",
                 image.type().to_string());
  return d;
}

Tensor resize_image(const Tensor& image, int64_t height, int64_t width, ResizeMethod method) {
  const ImageDims d = image_dims(image, "resize_image");
  TERN_CHECK_ARG(height > 0 && width > 0, "resize_image: target size ", height, "x", width,
                 " must be positive");
  if (method == ResizeMethod::kNearest) {
    Tensor out(image.dtype(), Shape{height, width, d.channels});
    const size_t pixel = static_cast<size_t>(d.channels) * dtype_size(image.dtype());
    const char* src = static_cast<const char*>(image.raw_data());
    char* dst = static_cast<char*>(out.raw_data());
    for (int64_t y = 0; y < height; ++y) {
      const int64_t sy = std::min(
          static_cast<int64_t>((static_cast<double>(y) + 0.5) * d.height / height), d.height - 1);
      for (int64_t x = 0; x < width; ++x) {
        const int64_t sx = std::min(
            static_cast<int64_t>((static_cast<double>(x) + 0.5) * d.width / width), d.width - 1);
        std::memcpy(dst + (y * width + x) * pixel, src + (sy * d.width + sx) * pixel, pixel);
      }
    }
    return out;
  }
  Tensor out(DType::kF32, Shape{height, width, d.channels});
  if (image.dtype() == DType::kU8) {
    resize_bilinear(image.data<uint8_t>(), d.height, d.width, d.channels, out.data<float>(), height,
                    width);
  } else {
    const Tensor f = as_f32(image);
    resize_bilinear(f.data<float>(), d.height, d.width, d.channels, out.data<float>(), height,
                    width);
  }
  return out;
}

Tensor crop_image(const Tensor& image, int64_t top, int64_t left, int64_t height, int64_t width) {
  const ImageDims d = image_dims(image, "crop_image");
  TERN_CHECK_ARG(height > 0 && width > 0 && top >= 0 && left >= 0 && top + height <= d.height &&
                     left + width <= d.width,
                 "crop_image: window ", height, "x", width, " at (", top, ", ", left,
                 ") does not fit in ", image.type().to_string());
  Tensor out(image.dtype(), Shape{height, width, d.channels});
  const size_t pixel = static_cast<size_t>(d.channels) * dtype_size(image.dtype());
  const char* src = static_cast<const char*>(image.raw_data());
  char* dst = static_cast<char*>(out.raw_data());
  for (int64_t y = 0; y < height; ++y) {
    std::memcpy(dst + y * width * pixel, src + ((top + y) * d.width + left) * pixel,
                static_cast<size_t>(width) * pixel);
  }
  return out;
}

Tensor flip_left_right(const Tensor& image) {
  const ImageDims d = image_dims(image, "flip_left_right");
  Tensor out(image.dtype(), image.shape());
  const size_t pixel = static_cast<size_t>(d.channels) * dtype_size(image.dtype());
  const char* src = static_cast<const char*>(image.raw_data());
  char* dst = static_cast<char*>(out.raw_data());
  for (int64_t y = 0; y < d.height; ++y) {
    for (int64_t x = 0; x < d.width; ++x) {
      std::memcpy(dst + (y * d.width + x) * pixel, src + (y * d.width + d.width - 1 - x) * pixel,
                  pixel);
    }
  }
  return out;
}

Tensor convert_image_dtype(const Tensor& image, DType dtype) {
  TERN_CHECK_ARG(image.defined(), "convert_image_dtype: undefined image");
  const DType from = image.dtype();
  const bool from_ok = from == DType::kU8 || is_floating(from);
  TERN_CHECK_ARG(from_ok && (dtype == DType::kU8 || is_floating(dtype)),
                 "convert_image_dtype: ", dtype_name(from), " -> ", dtype_name(dtype),
                 " (supported: u8 and floating types)");
  if (from == dtype) return image;
  if (is_floating(from) && is_floating(dtype)) return image.cast(dtype);
  if (from == DType::kU8) {
    Tensor f(DType::kF32, image.shape());
    const uint8_t* s = image.data<uint8_t>();
    float* o = f.data<float>();
    for (int64_t i = 0; i < image.num_elements(); ++i)
      o[i] = static_cast<float>(s[i]) * (1.0f / 255.0f);
    return dtype == DType::kF32 ? f : f.cast(dtype);
  }
  const Tensor f = as_f32(image);
  Tensor out(DType::kU8, image.shape());
  const float* s = f.data<float>();
  uint8_t* o = out.data<uint8_t>();
  for (int64_t i = 0; i < image.num_elements(); ++i) {
    const float v = s[i] * 255.5f;  // TensorFlow: scale by max + 0.5, truncate, saturate
    o[i] = static_cast<uint8_t>(v >= 255.0f ? 255.0f : (v > 0.0f ? v : 0.0f));
  }
  return out;
}

Tensor adjust_brightness(const Tensor& image, float delta) {
  image_dims(image, "adjust_brightness");
  return in_unit_range(image, [&](Tensor& f) {
    float* p = f.data<float>();
    for (int64_t i = 0; i < f.num_elements(); ++i) p[i] += delta;
  });
}

Tensor adjust_contrast(const Tensor& image, float factor) {
  const ImageDims d = image_dims(image, "adjust_contrast");
  return in_unit_range(image, [&](Tensor& f) {
    float* p = f.data<float>();
    const int64_t pixels = d.height * d.width;
    for (int64_t k = 0; k < d.channels; ++k) {
      double sum = 0;
      for (int64_t i = 0; i < pixels; ++i) sum += p[i * d.channels + k];
      const float mean = static_cast<float>(sum / static_cast<double>(pixels));
      for (int64_t i = 0; i < pixels; ++i) {
        float& v = p[i * d.channels + k];
        v = (v - mean) * factor + mean;
      }
    }
  });
}

Tensor normalize_image(const Tensor& image, const std::vector<float>& mean,
                       const std::vector<float>& stddev) {
  const ImageDims d = image_dims(image, "normalize_image");
  auto per_channel = [&](const std::vector<float>& v, const char* name) {
    TERN_CHECK_ARG(v.size() == 1 || static_cast<int64_t>(v.size()) == d.channels,
                   "normalize_image: ", v.size(), " ", name, " values for ", d.channels,
                   " channels");
    std::vector<float> out(static_cast<size_t>(d.channels));
    for (int64_t k = 0; k < d.channels; ++k)
      out[static_cast<size_t>(k)] = v[v.size() == 1 ? 0 : static_cast<size_t>(k)];
    return out;
  };
  const std::vector<float> m = per_channel(mean, "mean");
  std::vector<float> inv = per_channel(stddev, "stddev");
  for (float& s : inv) {
    TERN_CHECK_ARG(s > 0, "normalize_image: stddev must be positive, got ", s);
    s = 1.0f / s;
  }
  const float scale = image.dtype() == DType::kU8 ? 1.0f / 255.0f : 1.0f;
  const Tensor f = as_f32(image);
  Tensor out(DType::kF32, image.shape());
  const float* s = f.data<float>();
  float* o = out.data<float>();
  for (int64_t i = 0; i < d.height * d.width; ++i) {
    for (int64_t k = 0; k < d.channels; ++k) {
      const int64_t j = i * d.channels + k;
      o[j] = (s[j] * scale - m[static_cast<size_t>(k)]) * inv[static_cast<size_t>(k)];
    }
  }
  return out;
}

std::array<float, 4> random_uniforms(uint64_t key, RandomOpCounter op) {
  const Philox::Block b = Philox(key)(static_cast<uint64_t>(op));
  return {Philox::to_unit_float(b[0]), Philox::to_unit_float(b[1]), Philox::to_unit_float(b[2]),
          Philox::to_unit_float(b[3])};
}

std::array<int64_t, 2> random_crop_origin(int64_t h, int64_t w, int64_t crop_h, int64_t crop_w,
                                          uint64_t key) {
  TERN_CHECK_ARG(crop_h > 0 && crop_w > 0 && crop_h <= h && crop_w <= w, "random_crop: ", crop_h,
                 "x", crop_w, " window larger than the ", h, "x", w, " image");
  const std::array<float, 4> u = random_uniforms(key, RandomOpCounter::kCrop);
  const int64_t top =
      std::min(static_cast<int64_t>(u[0] * static_cast<float>(h - crop_h + 1)), h - crop_h);
  const int64_t left =
      std::min(static_cast<int64_t>(u[1] * static_cast<float>(w - crop_w + 1)), w - crop_w);
  return {top, left};
}

Tensor random_crop(const Tensor& image, int64_t height, int64_t width, uint64_t key) {
  const ImageDims d = image_dims(image, "random_crop");
  const auto [top, left] = random_crop_origin(d.height, d.width, height, width, key);
  return crop_image(image, top, left, height, width);
}

Tensor random_flip_left_right(const Tensor& image, uint64_t key) {
  image_dims(image, "random_flip_left_right");
  return random_uniforms(key, RandomOpCounter::kFlip)[0] < 0.5f ? flip_left_right(image) : image;
}

Tensor random_brightness(const Tensor& image, float max_delta, uint64_t key) {
  TERN_CHECK_ARG(max_delta >= 0, "random_brightness: max_delta must be >= 0, got ", max_delta);
  const float u = random_uniforms(key, RandomOpCounter::kBrightness)[0];
  return adjust_brightness(image, (2.0f * u - 1.0f) * max_delta);
}

Tensor random_contrast(const Tensor& image, float lower, float upper, uint64_t key) {
  TERN_CHECK_ARG(lower >= 0 && lower <= upper, "random_contrast: need 0 <= lower <= upper, got [",
                 lower, ", ", upper, "]");
  const float u = random_uniforms(key, RandomOpCounter::kContrast)[0];
  return adjust_contrast(image, lower + u * (upper - lower));
}

}  // namespace tern::data
