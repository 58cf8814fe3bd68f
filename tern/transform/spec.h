// The transform spec: the `[transform]` table of a TOML file (a transform file of its own, or a
// pipeline file that holds other tables too), as plain data. docs/transform.md lists every key.
//
//   [transform]
//   label = "price_class"           # optional: an int64 feature as is, or a bytes feature through
//                                   # its own vocabulary (the class names)
//   [[transform.features]]
//   input = "price"                 # the raw feature (tf.Example key)
//   op = "z_score"                  # z_score scale_to_0_1 identity vocabulary bucketize hash cross
//   default = "mean"                # a missing number: "mean" (the analyzer's) or a number
//   [[transform.features]]
//   input = "make"
//   op = "vocabulary"
//   top_k = 20                      # also frequency_threshold, num_oov_buckets, output
//
// The output `x` of the transform is the concatenation of the features in this order. Every
// error is a SpecError "file:line: key 'transform.features[1].top_k': problem" (with a
// did-you-mean for unknown keys).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tern/base/error.h"

namespace tern::transform {

// A spec that cannot be used (a usage error: `tern transform` exits 2).
class SpecError : public Error {
 public:
  using Error::Error;
};

enum class TransformOp : uint8_t {
  kZScore,      // (x - mean) / std; std 0 -> 0
  kScaleTo01,   // (x - min) / (max - min); max == min -> 0
  kIdentity,    // x as is (missing values filled)
  kVocabulary,  // bytes -> rank in the vocabulary; unknown -> an OOV bucket
  kBucketize,   // number -> quantile bucket over the training split
  kHash,        // bytes -> hash bucket
  kCross,       // two or more bytes features -> hash bucket of the combination
};
// "z_score", "scale_to_0_1", "identity", "vocabulary", "bucketize", "hash", "cross".
std::string_view transform_op_name(TransformOp op);

// How a raw feature is stored in tf.Examples and enters the transform graph.
enum class RawKind : uint8_t {
  kNumeric,      // float_list or int64_list of `length` values -> f32 [B] / [B, length], NaN missing
  kCategorical,  // bytes_list of one value -> i64 [B] fingerprint (tern/base/fingerprint.h)
  kImage,        // bytes_list of one value of H*W*C raw u8 pixels -> u8 [B, H, W, C]
};
std::string_view raw_kind_name(RawKind kind);  // "numeric", "categorical", "image"

// One-hot columns (the default) or the index as one f32 column.
enum class OutputForm : uint8_t { kOneHot, kIndex };

struct FeatureTransform {
  std::string name;                 // the output feature's name (default: the input, or the
                                    // inputs joined by "_x_" for a cross)
  TransformOp op = TransformOp::kIdentity;
  std::vector<std::string> inputs;  // one raw feature; a cross: two or more
  RawKind kind = RawKind::kNumeric;  // of the inputs (derived from op and shape)
  int64_t length = 1;                // numeric: values per example
  std::vector<int64_t> shape;        // image: [H, W, C] (raw u8 pixels in one bytes value)
  bool default_is_mean = true;       // numeric missing values: the analyzer's mean ...
  double default_value = 0;          // ... or this number
  int64_t top_k = 0;                 // vocabulary: keep the k most frequent (0 = all)
  int64_t frequency_threshold = 1;   // vocabulary: keep values seen at least this often
  int64_t num_oov_buckets = 1;       // vocabulary: buckets for unknown values (0: all-zero row)
  int64_t num_buckets = 0;           // bucketize: quantile buckets asked for (>= 2)
  int64_t hash_buckets = 0;          // hash, cross
  OutputForm output = OutputForm::kOneHot;
  int line = 0;  // where the entry starts in the spec file

  bool operator==(const FeatureTransform&) const = default;
};

struct TransformSpec {
  std::vector<FeatureTransform> features;  // output order
  std::string label;                       // the label feature ("" = none)
  std::string file;                        // where it was read (errors)
  // The [transform] table as TOML (toml++'s rendering; the artifact's transform.toml).
  std::string toml;

  // Every raw feature the graph takes, in order of first use.
  struct RawFeature {
    std::string name;
    RawKind kind;
    int64_t length = 1;          // numeric
    std::vector<int64_t> shape;  // image
  };
  std::vector<RawFeature> raw_features() const;
};

// The [transform] table of `toml_text` (other tables are ignored); `file` names it in errors.
// SpecError for a missing table, unknown or misplaced keys, wrong types, bad values.
TransformSpec parse_transform_spec(std::string_view toml_text, const std::string& file);
// The same from a file (NotFound if it cannot be read; at most 16 MiB).
TransformSpec read_transform_spec(const std::string& toml_path);

// The spec's features after the label, one line each ("price: z_score (default mean)").
std::string describe_spec(const TransformSpec& spec);

}  // namespace tern::transform
