// tf.train.Example and tf.train.SequenceExample as plain structs, parsed from and serialized to
// the protobuf wire format by hand (tensorflow/core/example/{feature,example}.proto):
//
//   Example         { Features features = 1; }
//   SequenceExample { Features context = 1; FeatureLists feature_lists = 2; }
//   Features        { map<string, Feature> feature = 1; }
//   Feature         { oneof kind { BytesList bytes_list = 1; FloatList float_list = 2;
//                                  Int64List int64_list = 3; } }
//   FeatureLists    { map<string, FeatureList> feature_list = 1; }
//   FeatureList     { repeated Feature feature = 1; }
//
// Parsing follows protobuf's rules: repeated scalars packed or not, unknown fields skipped, a
// repeated sub-message merged, the last map entry for a key kept. Serializing writes packed
// scalars and map entries in key order (protobuf's deterministic serialization). Malformed bytes
// are a DataLoss naming `what`, the feature and the byte offset.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace tern::data {

enum class FeatureKind : uint8_t { kNone, kBytes, kFloat, kInt64 };

// "bytes_list", "float_list", "int64_list" or "none".
std::string_view feature_kind_name(FeatureKind kind);

struct Feature {
  FeatureKind kind = FeatureKind::kNone;
  std::vector<std::string> bytes_list;
  std::vector<float> float_list;
  std::vector<int64_t> int64_list;

  static Feature bytes(std::vector<std::string> values);
  static Feature floats(std::vector<float> values);
  static Feature int64s(std::vector<int64_t> values);
  // Number of values in the list of its kind.
  size_t size() const;
  bool operator==(const Feature& o) const = default;
};

using Features = std::map<std::string, Feature, std::less<>>;
using FeatureLists = std::map<std::string, std::vector<Feature>, std::less<>>;

struct Example {
  Features features;
  bool operator==(const Example& o) const = default;
};

struct SequenceExample {
  Features context;
  FeatureLists feature_lists;
  bool operator==(const SequenceExample& o) const = default;
};

// `what` prefixes error messages, e.g. "tf.train.Example record 12".
Example parse_example_proto(std::string_view bytes, std::string_view what = "tf.train.Example");
SequenceExample parse_sequence_example_proto(std::string_view bytes,
                                             std::string_view what = "tf.train.SequenceExample");
// True if the message has a top-level field 2 (feature_lists), i.e. reads as a SequenceExample.
// Does not validate the rest.
bool looks_like_sequence_example(std::string_view bytes);

std::string serialize_feature(const Feature& feature);
std::string serialize_example(const Example& example);
std::string serialize_sequence_example(const SequenceExample& example);

}  // namespace tern::data
