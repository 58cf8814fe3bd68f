// Feature specs and parsing of tf.train.Example / SequenceExample records into tensors (what
// tf.io.parse_single_example / parse_example / parse_single_sequence_example do).
//
// One FeatureSpec per output, in order. What each yields, per record and per batch of B records:
//   FixedLen numeric, shape S      -> dtype[S]                    | dtype[B, S]
//   FixedLen bytes, shape []       -> u8[len] (the one value)     | u8[B, len] (equal lengths)
//   FixedLen bytes, shape S != []  -> dtype[S]: the one value's bytes reinterpreted as
//                                     little-endian dtype values (tf.io.decode_raw)
//   VarLen numeric, dense          -> dtype[n] (or [pad_to])      | dtype[B, max n (or pad_to)]
//   VarLen numeric, ragged         -> dtype[n], i64[] n           | dtype[sum n], i64[B] lengths
//   VarLen bytes (per record only) -> u8[total], i64[n] string lengths
// A missing FixedLen feature takes its default (one value broadcasts) or is an error; a missing
// VarLen feature is empty. Values are converted to the output dtype (int64 to narrower integers
// with a range check). Spec mismatches are InvalidArgument and malformed protobuf is DataLoss,
// both naming the record index, the feature and (for DataLoss) the byte offset.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tern/data/element.h"
#include "tern/data/example_proto.h"

namespace tern::data {

struct FeatureSpec {
  std::string name;
  FeatureKind kind = FeatureKind::kFloat;
  DType dtype = DType::kF32;  // output dtype (u8 for bytes unless reinterpreted)
  bool var_len = false;
  std::vector<int64_t> shape;         // FixedLen: the shape of the values
  std::vector<double> default_value;  // FixedLen: used when absent; empty: required
  bool ragged = false;                // VarLen: values + row lengths instead of dense
  int64_t pad_to = 0;                 // VarLen dense: pad to this length (0: the longest)
  double padding_value = 0;           // VarLen dense

  bool operator==(const FeatureSpec&) const = default;
};

// tf.io.FixedLenFeature: `dtype` defaults to f32 / i64 / u8 by kind.
FeatureSpec fixed_len_feature(std::string name, FeatureKind kind, std::vector<int64_t> shape = {},
                              std::vector<double> default_value = {});
// tf.io.VarLenFeature (ragged = true gives tf.RaggedFeature's values + row lengths).
FeatureSpec var_len_feature(std::string name, FeatureKind kind, bool ragged = false);

// InvalidArgument naming the feature if a spec is inconsistent (duplicate names, negative dims,
// a dtype the kind cannot convert to, a default of the wrong size).
void validate_feature_specs(const std::vector<FeatureSpec>& specs, std::string_view what);
// Names of the output components: "x", or "x.values" and "x.row_lengths" for ragged ones.
std::vector<std::string> feature_output_names(const std::vector<FeatureSpec>& specs);

// How parse errors name record i of a call: by its source position when known
// ("tf.train.Example at train.tfrecord record 37", element.h), else as first_index + i
// ("tf.train.Example record 12"), else without an index. An int converts (first_index).
struct RecordNames {
  RecordNames(int64_t first = -1) : first_index(first) {}  // NOLINT: an index names records
  explicit RecordNames(const ElementOrigin* positions, int64_t first = -1)
      : first_index(first), origin(positions) {}

  int64_t first_index = -1;
  const ElementOrigin* origin = nullptr;  // one position per record; may be null or empty

  std::string name(std::string_view what, size_t i) const;
};

Element parse_example_record(std::string_view record, const std::vector<FeatureSpec>& specs,
                             const RecordNames& names = {});
// Records as one batch (record i named names.name(.., i)). Canonical records of fixed-length
// features take the allocation-free path (example_fast_parse.h), all others the general one.
Element parse_example_batch(const std::vector<std::string_view>& records,
                            const std::vector<FeatureSpec>& specs, const RecordNames& names = {});
// The general parser alone (each record into Features, then the batch): the reference the fast
// path is tested against.
Element parse_example_batch_general(const std::vector<std::string_view>& records,
                                    const std::vector<FeatureSpec>& specs,
                                    const RecordNames& names = {});
// The same from already parsed Examples (`names` only name them in errors).
Element features_to_batch(const std::vector<const Features*>& examples,
                          const std::vector<FeatureSpec>& specs, const RecordNames& names,
                          bool squeeze_batch, std::string_view what);

// --- SequenceExample ---
struct SequenceFeatureSpec {
  std::string name;
  FeatureKind kind = FeatureKind::kFloat;
  DType dtype = DType::kF32;
  bool var_len = false;        // steps of varying length: values + row lengths per step
  std::vector<int64_t> shape;  // fixed: the shape of each step
  bool allow_missing = false;  // a missing list is zero steps instead of an error
};

struct SequenceExampleSpec {
  std::vector<FeatureSpec> context;
  std::vector<SequenceFeatureSpec> sequence;
};

// Context outputs as parse_example_record, then per sequence feature: fixed -> dtype[T, S];
// var_len -> dtype[sum of step lengths], i64[T] step lengths.
Element parse_sequence_example_record(std::string_view record, const SequenceExampleSpec& spec,
                                      const RecordNames& names = {});
std::vector<std::string> sequence_output_names(const SequenceExampleSpec& spec);
void validate_sequence_spec(const SequenceExampleSpec& spec, std::string_view what);

// --- helpers shared by the parsers ---
struct FeatureRows {
  std::vector<const Feature*> rows;  // one per record (or per step), nullptr if absent
  std::string_view what;             // message name for errors, e.g. "tf.train.Example"
  RecordNames names;                 // names rows[i]'s record (the one record, for steps)
  bool rows_are_steps = false;       // rows are the steps of one record's feature list
};
// Appends the output tensors of `spec` for the rows (batched, or squeezed for one record).
void feature_rows_to_tensors(const FeatureRows& rows, const FeatureSpec& spec, bool squeeze,
                             Element& out);
// "tf.train.Example record 12" (or without the index when negative).
std::string record_name(std::string_view message, int64_t record_index);
// Converts `feature`'s numeric values into slots offset, offset + 1, ... of `dtype` at `dst`.
// Returns the index of the first value out of `dtype`'s range (nothing is written from it on),
// or -1.
int64_t store_feature_values(const Feature& feature, DType dtype, void* dst, size_t offset);
// Fills `n` slots of `dtype` at `dst` + offset with `value`.
void fill_value(DType dtype, void* dst, size_t offset, size_t n, double value);

}  // namespace tern::data
