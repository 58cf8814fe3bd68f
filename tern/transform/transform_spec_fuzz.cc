// Fuzz target: the [transform] spec reader (a file users and pipelines hand to `tern transform`).
// Any bytes must parse or fail with a SpecError (InvalidArgument); a parsed spec's rendering (the
// artifact's transform.toml) must parse back to the same features, and its graph inputs must be
// the spec's raw features.
#include <cstdlib>
#include <string_view>

#include "tern/transform/spec.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tern;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  transform::TransformSpec spec;
  try {
    spec = transform::parse_transform_spec(text, "spec.toml");
  } catch (const transform::SpecError& e) {
    if (e.code() != ErrorCode::kInvalidArgument) std::abort();
    return 0;
  }
  transform::TransformSpec again = transform::parse_transform_spec(spec.toml, "transform.toml");
  if (again.features.size() != spec.features.size() || again.label != spec.label) std::abort();
  for (size_t i = 0; i < spec.features.size(); ++i) {
    transform::FeatureTransform a = spec.features[i], b = again.features[i];
    a.line = b.line = 0;
    if (!(a == b)) std::abort();
  }
  if (spec.raw_features().empty()) std::abort();
  return 0;
}
