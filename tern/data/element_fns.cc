// Built-in element functions of pipeline specs, on top of the image ops.
#include "tern/data/element_fns.h"

#include <algorithm>
#include <array>

#include "tern/base/error.h"
#include "tern/data/image_codec.h"

namespace tern::data {
namespace {

struct FnInfo {
  ElementFnKind kind;
  const char* name;
};

constexpr std::array<FnInfo, 13> kFns = {{
    {ElementFnKind::kScale, "scale"},
    {ElementFnKind::kCast, "cast"},
    {ElementFnKind::kNormalize, "normalize"},
    {ElementFnKind::kReshape, "reshape"},
    {ElementFnKind::kResize, "resize"},
    {ElementFnKind::kCenterCrop, "center_crop"},
    {ElementFnKind::kRandomCrop, "random_crop"},
    {ElementFnKind::kRandomFlip, "random_flip"},
    {ElementFnKind::kRandomBrightness, "random_brightness"},
    {ElementFnKind::kRandomContrast, "random_contrast"},
    {ElementFnKind::kOneHot, "one_hot"},
    {ElementFnKind::kDecodeImage, "decode_image"},
    {ElementFnKind::kReadImage, "read_image"},
}};

// x * factor as f32, from any real dtype.
Tensor scale_to_f32(const Tensor& x, float factor) {
  Tensor out(DType::kF32, x.shape());
  float* o = out.data<float>();
  const int64_t n = x.num_elements();
  dispatch_dtype(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* p = x.data<T>();
    for (int64_t i = 0; i < n; ++i)
      o[i] = static_cast<float>(static_cast<compute_t<T>>(p[i])) * factor;
  });
  return out;
}

// (x - mean[c]) / std[c] over the last axis (c cycles over it); u8 is read as x / 255.
Tensor normalize_last_axis(const Tensor& x, const std::vector<float>& mean,
                           const std::vector<float>& stddev) {
  const int64_t c = x.rank() > 0 ? x.shape().dims().back() : 1;
  auto per_channel = [&](const std::vector<float>& v, const char* name) {
    TERN_CHECK_ARG(v.size() == 1 || static_cast<int64_t>(v.size()) == c, "normalize: ", v.size(),
                   " ", name, " values for a last axis of ", c, " (shape ", x.shape(), ")");
    std::vector<float> out(static_cast<size_t>(c));
    for (int64_t k = 0; k < c; ++k)
      out[static_cast<size_t>(k)] = v[v.size() == 1 ? 0 : static_cast<size_t>(k)];
    return out;
  };
  std::vector<float> m = per_channel(mean, "mean"), s = per_channel(stddev, "std");
  Tensor out = scale_to_f32(x, x.dtype() == DType::kU8 ? 1.0f / 255.0f : 1.0f);
  float* o = out.data<float>();
  for (auto& v : s) v = 1.0f / v;
  const int64_t n = out.num_elements();
  for (int64_t i = 0; i < n; i += c) {
    for (int64_t k = 0; k < c; ++k)
      o[i + k] = (o[i + k] - m[static_cast<size_t>(k)]) * s[static_cast<size_t>(k)];
  }
  return out;
}

Tensor center_crop(const Tensor& image, int64_t height, int64_t width) {
  const ImageDims d = image_dims(image, "center_crop");
  TERN_CHECK_ARG(height <= d.height && width <= d.width, "center_crop: ", height, "x", width,
                 " window larger than the ", d.height, "x", d.width, " image");
  return crop_image(image, (d.height - height) / 2, (d.width - width) / 2, height, width);
}

// Integer class indices of shape S -> f32 S + [depth].
Tensor one_hot(const Tensor& labels, int64_t depth) {
  TERN_CHECK_ARG(is_integer(labels.dtype()), "one_hot: expected integer class indices, got ",
                 element_signature({labels}));
  std::vector<int64_t> dims = labels.shape().dims();
  dims.push_back(depth);
  Tensor out(DType::kF32, Shape(dims));
  float* o = out.data<float>();
  std::fill_n(o, out.num_elements(), 0.0f);
  for (int64_t i = 0; i < labels.num_elements(); ++i) {
    const auto k = static_cast<int64_t>(labels.get(i));
    TERN_CHECK_ARG(k >= 0 && k < depth, "one_hot: class index ", k, " is outside [0, ", depth, ")");
    o[i * depth + k] = 1.0f;
  }
  return out;
}

Tensor apply_to_tensor(const ElementFnSpec& f, const Tensor& x, uint64_t key, bool training) {
  switch (f.kind) {
    case ElementFnKind::kScale:
      return scale_to_f32(x, static_cast<float>(f.factor));
    case ElementFnKind::kCast:
      return x.cast(f.dtype);
    case ElementFnKind::kNormalize:
      return normalize_last_axis(x, f.mean, f.stddev);
    case ElementFnKind::kReshape:
      return x.reshape(Shape(f.shape));
    case ElementFnKind::kResize:
      return resize_image(x, f.height, f.width, f.method);
    case ElementFnKind::kCenterCrop:
      return center_crop(x, f.height, f.width);
    case ElementFnKind::kRandomCrop:
      return training ? random_crop(x, f.height, f.width, key) : center_crop(x, f.height, f.width);
    case ElementFnKind::kRandomFlip:
      return training ? random_flip_left_right(x, key) : x;
    case ElementFnKind::kRandomBrightness:
      return training ? random_brightness(x, f.max_delta, key) : x;
    case ElementFnKind::kRandomContrast:
      return training ? random_contrast(x, f.lower, f.upper, key) : x;
    case ElementFnKind::kOneHot:
      return one_hot(x, f.depth);
    case ElementFnKind::kDecodeImage:
      TERN_CHECK_ARG(x.dtype() == DType::kU8 && x.rank() == 1,
                     "decode_image: expected encoded bytes u8[n], got ", element_signature({x}));
      return decode_image({static_cast<const char*>(x.raw_data()), x.nbytes()},
                          {.channels = f.channels}, "decode_image");
    case ElementFnKind::kReadImage:
      return read_image_file(tensor_bytes(x, "read_image: file path"), {.channels = f.channels});
  }
  return x;
}

}  // namespace

bool element_fn_is_random(ElementFnKind kind) {
  return kind == ElementFnKind::kRandomCrop || kind == ElementFnKind::kRandomFlip ||
         kind == ElementFnKind::kRandomBrightness || kind == ElementFnKind::kRandomContrast;
}

bool element_fn_is_identity_in_eval(ElementFnKind kind) {
  return element_fn_is_random(kind) && kind != ElementFnKind::kRandomCrop;
}

std::string element_fn_name(ElementFnKind kind) {
  for (const auto& f : kFns) {
    if (f.kind == kind) return f.name;
  }
  return "?";
}

const std::vector<std::string>& element_fn_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v;
    for (const auto& f : kFns) v.emplace_back(f.name);
    return v;
  }();
  return names;
}

ElementFnKind element_fn_from_name(const std::string& name) {
  for (const auto& f : kFns) {
    if (name == f.name) return f.kind;
  }
  throw_error(ErrorCode::kInvalidArgument, "unknown element function '", name, "'");
}

void validate_element_fn(const ElementFnSpec& f, const std::string& what) {
  const std::string name = element_fn_name(f.kind);
  TERN_CHECK_ARG(f.component >= 0, what, ": ", name, ": component ", f.component, " < 0");
  switch (f.kind) {
    case ElementFnKind::kNormalize:
      TERN_CHECK_ARG(!f.mean.empty() && !f.stddev.empty(), what,
                     ": normalize needs mean and std values");
      for (float s : f.stddev)
        TERN_CHECK_ARG(s > 0, what, ": normalize: std must be positive, got ", s);
      break;
    case ElementFnKind::kReshape:
      for (int64_t d : f.shape) TERN_CHECK_ARG(d >= 0, what, ": reshape: negative dim ", d);
      break;
    case ElementFnKind::kResize:
    case ElementFnKind::kCenterCrop:
    case ElementFnKind::kRandomCrop:
      TERN_CHECK_ARG(f.height > 0 && f.width > 0, what, ": ", name,
                     " needs a positive height and width, got ", f.height, "x", f.width);
      break;
    case ElementFnKind::kRandomBrightness:
      TERN_CHECK_ARG(f.max_delta >= 0, what, ": random_brightness: max_delta must be >= 0, got ",
                     f.max_delta);
      break;
    case ElementFnKind::kRandomContrast:
      TERN_CHECK_ARG(f.lower >= 0 && f.lower <= f.upper, what,
                     ": random_contrast needs 0 <= lower <= upper, got [", f.lower, ", ", f.upper,
                     "]");
      break;
    case ElementFnKind::kOneHot:
      TERN_CHECK_ARG(f.depth > 0, what, ": one_hot needs a positive depth, got ", f.depth);
      break;
    case ElementFnKind::kDecodeImage:
    case ElementFnKind::kReadImage:
      TERN_CHECK_ARG(f.channels >= 0 && f.channels <= 4 && f.channels != 2, what, ": ", name,
                     ": channels must be 0, 1, 3 or 4, got ", f.channels);
      break;
    default:
      break;
  }
}

Element apply_element_fn(const ElementFnSpec& f, Element e, uint64_t key, bool training) {
  const auto k = static_cast<size_t>(f.component);
  TERN_CHECK_ARG(k < e.size(), element_fn_name(f.kind), ": component ", f.component,
                 " of an element with ", e.size(), " components ", element_signature(e));
  e[k] = apply_to_tensor(f, e[k], key, training);
  return e;
}

}  // namespace tern::data
