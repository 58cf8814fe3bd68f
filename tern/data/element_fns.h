// Built-in element functions: the per-element transforms a pipeline spec (pipeline_spec.h) names
// instead of C++ callables: scale, cast, normalize, reshape, resize, crops, random flip /
// brightness / contrast, one_hot and image decoding (from bytes or from a file path). Each rewrites
// one component of an element; none changes its input tensors (elements may share storage with a
// cache or in-memory data).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tern/data/element.h"
#include "tern/data/image_ops.h"

namespace tern::data {

enum class ElementFnKind {
  kScale,             // f32 x * factor
  kCast,              // to dtype
  kNormalize,         // f32 (x - mean) / std over the last axis (u8 is scaled to [0, 1] first)
  kReshape,           // to shape (same element count)
  kResize,            // image [H, W, C] to height x width (bilinear gives f32)
  kCenterCrop,        // image, height x width around the center
  kRandomCrop,        // image, uniform origin; evaluation: center crop
  kRandomFlip,        // image, left-right with probability 1/2; evaluation: identity
  kRandomBrightness,  // image + delta, delta uniform in [-max_delta, max_delta] ([0, 1] units)
  kRandomContrast,    // image, factor uniform in [lower, upper] around the channel mean
  kOneHot,            // integer class indices S -> f32 S + [depth]
  kDecodeImage,       // JPEG / PNG bytes u8 [n] -> u8 [H, W, C]
  kReadImage,         // a JPEG / PNG file path u8 [n] -> the decoded image u8 [H, W, C]
};

struct ElementFnSpec {
  ElementFnKind kind = ElementFnKind::kScale;
  int64_t component = 0;  // which component the function rewrites
  double factor = 1.0 / 255;
  DType dtype = DType::kF32;
  std::vector<float> mean = {0}, stddev = {1};  // one value, or one per channel (last axis)
  std::vector<int64_t> shape;
  int64_t height = 0, width = 0;
  ResizeMethod method = ResizeMethod::kBilinear;
  float max_delta = 0, lower = 1, upper = 1;
  int64_t depth = 0;
  int channels = 0;  // decode_image, read_image: 0 keeps the stored channels

  bool operator==(const ElementFnSpec&) const = default;
};

// True for the functions that draw random numbers (their evaluation form is deterministic).
bool element_fn_is_random(ElementFnKind kind);
// True if the evaluation form leaves the element unchanged (flip, brightness, contrast).
bool element_fn_is_identity_in_eval(ElementFnKind kind);
// "normalize", "random_crop", ...
std::string element_fn_name(ElementFnKind kind);
// The names above in enum order.
const std::vector<std::string>& element_fn_names();
ElementFnKind element_fn_from_name(const std::string& name);  // InvalidArgument if unknown

// InvalidArgument naming `what` if the parameters cannot work (non-positive sizes, empty or
// non-positive std, a missing depth, ...).
void validate_element_fn(const ElementFnSpec& fn, const std::string& what);

// Applies `fn` to component fn.component of `e`. `key` drives random functions when `training`;
// otherwise they run their evaluation form.
Element apply_element_fn(const ElementFnSpec& fn, Element e, uint64_t key, bool training);

}  // namespace tern::data
