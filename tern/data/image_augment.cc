// with_random_keys (a stage that numbers elements per epoch) and the fused augment map.
#include "tern/data/image_augment.h"

#include <algorithm>
#include <cstring>

#include "tern/base/error.h"
#include "tern/data/iterator_base.h"

namespace tern::data {
namespace {

class RandomKeysDataset : public Dataset {
 public:
  RandomKeysDataset(DatasetPtr input, uint64_t seed) : input_(std::move(input)), seed_(seed) {
    TERN_CHECK_ARG(input_ != nullptr, "with_random_keys: null input dataset");
  }
  std::string name() const override { return "RandomKeys"; }
  int64_t cardinality() const override { return input_->cardinality(); }
  std::unique_ptr<IteratorBase> make_stage_iterator(const IteratorContext& parent) const override;

  const DatasetPtr input_;
  const uint64_t seed_;
};

class RandomKeysIterator : public IteratorBase {
 public:
  RandomKeysIterator(const IteratorContext& parent, const RandomKeysDataset& ds)
      : IteratorBase(parent, ds.name()),
        base_(mix_seed(ds.seed_, context().epoch_key)),
        input_(ds.input_->make_stage_iterator(context())) {}

 protected:
  std::optional<Element> get_next() override {
    std::optional<Element> e = input_->next();
    if (!e) return std::nullopt;
    const uint64_t key = mix_seed(base_, static_cast<uint64_t>(position_++));
    Tensor k(DType::kI64, Shape{});
    *k.data<int64_t>() = static_cast<int64_t>(key);
    e->push_back(std::move(k));
    return e;
  }
  void save_state(StateWriter& w) override {
    w.write_int("position", position_);
    input_->save(w);
  }
  void restore_state(StateReader& r) override {
    const int64_t position = r.read_int("position");
    TERN_CHECK_ARG(position >= 0, "iterator state: RandomKeys position ", position);
    position_ = position;
    input_->restore(r);
  }

 private:
  const uint64_t base_;
  std::unique_ptr<IteratorBase> input_;
  int64_t position_ = 0;
};

std::unique_ptr<IteratorBase> RandomKeysDataset::make_stage_iterator(
    const IteratorContext& parent) const {
  return std::make_unique<RandomKeysIterator>(parent, *this);
}

Tensor load_image(const Tensor& component, const ImageAugment& a) {
  switch (a.source) {
    case ImageSource::kTensor:  // [H, W] images (IDX) are one channel
      return component.rank() == 2
                 ? component.reshape(Shape{component.shape().dim(0), component.shape().dim(1), 1})
                 : component;
    case ImageSource::kEncodedBytes:
      TERN_CHECK_ARG(component.dtype() == DType::kU8 && component.rank() == 1,
                     "augment_images: expected encoded image bytes (u8[n]), got ",
                     element_signature({component}));
      return decode_image({static_cast<const char*>(component.raw_data()), component.nbytes()},
                          a.decode, "encoded image");
    case ImageSource::kFilePath:
      return read_image_file(tensor_bytes(component, "augment_images: image path"), a.decode);
  }
  return component;
}

// out[y, x, k] = src[top + y, left + x (mirrored if flip), k] * scale[k] + shift[k].
template <typename T>
void crop_flip_affine(const T* src, int64_t src_w, int64_t c, int64_t top, int64_t left, int64_t h,
                      int64_t w, bool flip, const float* scale, const float* shift, float* out) {
  for (int64_t y = 0; y < h; ++y) {
    const T* row = src + ((top + y) * src_w + left) * c;
    float* o = out + y * w * c;
    for (int64_t x = 0; x < w; ++x) {
      const T* p = row + (flip ? w - 1 - x : x) * c;
      for (int64_t k = 0; k < c; ++k) o[x * c + k] = static_cast<float>(p[k]) * scale[k] + shift[k];
    }
  }
}

}  // namespace

DatasetPtr with_random_keys(DatasetPtr input, uint64_t seed) {
  return std::make_shared<RandomKeysDataset>(std::move(input), seed);
}

Tensor augment_image(const Tensor& component, const ImageAugment& a, uint64_t key) {
  Tensor img = load_image(component, a);
  image_dims(img, "augment_images");
  const bool from_u8 = img.dtype() == DType::kU8;
  const float unit = from_u8 ? 255.0f : 1.0f;  // value of "1.0" in the image's units
  if (!from_u8 && img.dtype() != DType::kF32) img = img.cast(DType::kF32);
  const bool resized = a.resize_height > 0 || a.resize_width > 0;
  if (resized) img = resize_image(img, a.resize_height, a.resize_width);
  const ImageDims d = image_dims(img, "augment_images");

  int64_t top = 0, left = 0, h = d.height, w = d.width;
  if (a.crop_height > 0 || a.crop_width > 0) {
    h = a.crop_height;
    w = a.crop_width;
    const auto origin = random_crop_origin(d.height, d.width, h, w, key);
    top = origin[0];
    left = origin[1];
  }
  const bool flip = a.flip_left_right && random_uniforms(key, RandomOpCounter::kFlip)[0] < 0.5f;
  const bool brightness = a.max_brightness_delta > 0;
  const bool contrast = a.contrast_lower != 1 || a.contrast_upper != 1;
  const bool normalize = !a.mean.empty() || !a.stddev.empty();
  if (!brightness && !contrast && !normalize) {
    Tensor out = crop_image(img, top, left, h, w);
    return flip ? flip_left_right(out) : out;
  }

  const size_t c = static_cast<size_t>(d.channels);
  std::vector<float> scale(c, 1.0f / unit), shift(c, 0.0f);
  // Without jitter, normalization folds into the copy: x * (1 / (unit * std)) - mean / std.
  std::vector<float> mean(c, 0.0f), inv_std(c, 1.0f);
  if (normalize) {
    auto pick = [&](const std::vector<float>& v, const char* name, float fallback, size_t k) {
      if (v.empty()) return fallback;
      TERN_CHECK_ARG(v.size() == 1 || v.size() == c, "augment_images: ", v.size(), " ", name,
                     " values for ", c, " channels");
      return v[v.size() == 1 ? 0 : k];
    };
    for (size_t k = 0; k < c; ++k) {
      mean[k] = pick(a.mean, "mean", 0.0f, k);
      const float s = pick(a.stddev, "stddev", 1.0f, k);
      TERN_CHECK_ARG(s > 0, "augment_images: stddev must be positive, got ", s);
      inv_std[k] = 1.0f / s;
    }
  }
  const bool fold = !brightness && !contrast;
  if (fold) {
    for (size_t k = 0; k < c; ++k) {
      scale[k] = inv_std[k] / unit;
      shift[k] = -mean[k] * inv_std[k];
    }
  }
  Tensor out(DType::kF32, Shape{h, w, d.channels});
  float* o = out.data<float>();
  if (img.dtype() == DType::kU8) {
    crop_flip_affine(img.data<uint8_t>(), d.width, d.channels, top, left, h, w, flip, scale.data(),
                     shift.data(), o);
  } else {
    crop_flip_affine(img.data<float>(), d.width, d.channels, top, left, h, w, flip, scale.data(),
                     shift.data(), o);
  }
  if (fold) return out;

  // Jitter in [0, 1] units: brightness, then contrast around the per-channel mean.
  const int64_t pixels = h * w;
  if (brightness) {
    const float u = random_uniforms(key, RandomOpCounter::kBrightness)[0];
    const float delta = (2.0f * u - 1.0f) * a.max_brightness_delta;
    for (int64_t i = 0; i < pixels * d.channels; ++i) o[i] += delta;
  }
  if (contrast) {
    TERN_CHECK_ARG(a.contrast_lower >= 0 && a.contrast_lower <= a.contrast_upper,
                   "augment_images: need 0 <= contrast_lower <= contrast_upper, got [",
                   a.contrast_lower, ", ", a.contrast_upper, "]");
    const float u = random_uniforms(key, RandomOpCounter::kContrast)[0];
    const float factor = a.contrast_lower + u * (a.contrast_upper - a.contrast_lower);
    for (size_t k = 0; k < c; ++k) {
      double sum = 0;
      for (int64_t i = 0; i < pixels; ++i) sum += o[i * d.channels + static_cast<int64_t>(k)];
      const float m = static_cast<float>(sum / static_cast<double>(pixels));
      for (int64_t i = 0; i < pixels; ++i) {
        float& v = o[i * d.channels + static_cast<int64_t>(k)];
        v = (v - m) * factor + m;
      }
    }
  }
  if (normalize) {
    for (int64_t i = 0; i < pixels; ++i) {
      for (size_t k = 0; k < c; ++k) {
        float& v = o[i * d.channels + static_cast<int64_t>(k)];
        v = (v - mean[k]) * inv_std[k];
      }
    }
    return out;
  }
  if (from_u8 && !resized) return convert_image_dtype(out, DType::kU8);
  for (int64_t i = 0; i < pixels * d.channels; ++i) o[i] *= unit;
  return out;
}

DatasetPtr augment_images(DatasetPtr input, ImageAugment augment, uint64_t seed,
                          MapOptions options) {
  TERN_CHECK_ARG((augment.resize_height > 0) == (augment.resize_width > 0),
                 "augment_images: resize needs both height and width, got ", augment.resize_height,
                 "x", augment.resize_width);
  TERN_CHECK_ARG((augment.crop_height > 0) == (augment.crop_width > 0),
                 "augment_images: crop needs both height and width, got ", augment.crop_height, "x",
                 augment.crop_width);
  return with_random_keys(std::move(input), seed)
      ->map(
          [augment = std::move(augment)](Element e) {
            TERN_CHECK_ARG(e.size() >= 2, "augment_images: element has no image component");
            const uint64_t key = static_cast<uint64_t>(*e.back().data<int64_t>());
            e.pop_back();
            e[0] = augment_image(e[0], augment, key);
            return e;
          },
          options);
}

}  // namespace tern::data
