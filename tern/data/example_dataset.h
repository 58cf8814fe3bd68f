// Datasets of parsed tf.train.Example / SequenceExample records: the map-friendly bridge from
// TFRecord files written by TensorFlow to training tensors.
//
//   auto ds = parse_example(tfrecord_dataset({"train.tfrecord"}),
//                           {fixed_len_feature("image", FeatureKind::kFloat, {28, 28}),
//                            fixed_len_feature("label", FeatureKind::kInt64)},
//                           {.num_parallel_calls = kAutotune})
//                 ->shuffle(10000, 42)
//                 ->batch(128);
//
// The input's elements are serialized records (rank-1 u8, as tfrecord_dataset yields). Errors
// name the record's index in the input's order.
#pragma once

#include <vector>

#include "tern/data/dataset.h"
#include "tern/data/example_parser.h"

namespace tern::data {

// One output element per record (see example_parser.h for what each spec yields).
DatasetPtr parse_example(DatasetPtr records, std::vector<FeatureSpec> specs,
                         MapOptions options = {});
// Records grouped `batch_size` at a time and parsed as a batch (tf.data's batch-then-parse):
// VarLen features come out dense-padded to the batch's longest or as values + row lengths.
DatasetPtr parse_example_batched(DatasetPtr records, int64_t batch_size,
                                 std::vector<FeatureSpec> specs, bool drop_remainder = false,
                                 MapOptions options = {});
DatasetPtr parse_sequence_example(DatasetPtr records, SequenceExampleSpec spec,
                                  MapOptions options = {});

// The bytes of a rank-1 u8 record tensor, without copying; InvalidArgument naming `what`.
std::string_view record_view(const Tensor& record, std::string_view what);

}  // namespace tern::data
