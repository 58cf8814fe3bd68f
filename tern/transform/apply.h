// apply_transform: the transform graph run over TFRecords of raw tf.Examples (compiled once, in
// batches), written as TFRecords of Examples with `x` (float_list: the transform's output per
// example, flattened) and `label` (int64_list: the class index; absent without a label), in the
// input order. Raw records go through the same decoding as the analysis (raw_batch.h); a record
// without a required feature, with a feature of the wrong kind or length, or with a label the
// training split never had, is an error naming the file and the record index.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tern/transform/artifact.h"

namespace tern::transform {

inline constexpr const char* kOutputFeature = "x";
inline constexpr const char* kLabelFeature = "label";

struct ApplyOptions {
  int64_t batch_size = 1024;  // the executable's batch (the last batch is padded)
};

// Writes `out_tfrecord` (atomically: a temp file renamed into place; its folder is created).
// Returns the number of records written.
int64_t apply_transform(const TransformArtifact& artifact,
                        const std::vector<std::string>& in_tfrecords,
                        const std::string& out_tfrecord, const ApplyOptions& options = {});

}  // namespace tern::transform
