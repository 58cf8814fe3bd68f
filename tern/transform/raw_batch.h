// The raw features of a batch of tf.Example records as the transform graph takes them (one
// tensor per raw feature, TransformSpec::raw_features() order), and the label. Shared by analyze
// (which also keeps the strings) and apply_transform, so the data the analyzers see is exactly
// what the graph is fed.
//
//   numeric      float_list / int64_list of `length` values -> f32 [B] (length 1) or [B, length];
//                absent or empty -> NaN (the graph fills the default)
//   categorical  bytes_list of one value -> i64 [B], fingerprint64 of the bytes; absent or empty ->
//                the fingerprint of ""
//   image        bytes_list of one value of H*W*C bytes -> u8 [B, H, W, C]; required
//   label        int64_list of one value, or bytes_list of one value; required
//
// Decoding goes through tern/data's Example parsing: records whose features are all fixed-length
// (numbers, images, an int64 label) take parse_example_batch_fast (no per-record allocation);
// others, or records it declines, go through parse_example_proto one by one. A feature of the
// wrong kind or length, or a missing required one, is InvalidArgument naming the file, the record
// index and the feature; malformed protobuf is DataLoss naming them and the byte offset.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tern/data/example_proto.h"
#include "tern/tensor/tensor.h"
#include "tern/transform/spec.h"

namespace tern::transform {

struct RawColumn {
  Tensor values;                     // see above
  std::vector<std::string> strings;  // categorical, when kept: the bytes ("" when missing)
  std::vector<uint8_t> missing;      // numeric and categorical: 1 where the example lacks it
};

struct RawBatch {
  int64_t size = 0;
  std::vector<RawColumn> columns;  // spec.raw_features() order
  bool label_is_bytes = false;
  Tensor label_ints;                       // i64 [B] (int64 labels)
  std::vector<std::string> label_strings;  // bytes labels
};

class RawDecoder {
 public:
  // keep_strings: also fill RawColumn::strings (the analyzers count them).
  RawDecoder(const TransformSpec& spec, bool keep_strings);
  ~RawDecoder();

  // records[i] is record first_index + i of `file`. Thread-safe.
  void decode(std::span<const std::string_view> records, const std::string& file,
              int64_t first_index, RawBatch& out) const;

  const std::vector<TransformSpec::RawFeature>& features() const { return features_; }

 private:
  bool decode_fast(std::span<const std::string_view> records, RawBatch& out) const;
  void decode_general(std::span<const std::string_view> records, const std::string& file,
                      int64_t first_index, RawBatch& out) const;

  std::vector<TransformSpec::RawFeature> features_;
  std::string label_;
  bool keep_strings_;
  bool fast_ok_;  // every raw feature fixed-length (no categorical)
  // What the general path last saw of each numeric feature (and the label): the fast path's
  // spec asks for that kind (a guess; a record of the other kind makes it decline).
  mutable std::unique_ptr<std::atomic<uint8_t>[]> kinds_;  // data::FeatureKind per feature + label
};

// "train.tfrecord: record 17" (what errors about one record start with).
std::string record_where(const std::string& file, int64_t index);

}  // namespace tern::transform
