// Analyze: every analyzer of a transform spec over the training split's TFRecords in one pass
// (TF Transform's analyzers), and the result as analysis.json.
//
// The files are read in blocks (records.h), cut into chunks of records decoded into the graph's
// raw inputs (raw_batch.h) and analyzed on the cores in parallel; each chunk's partial result is
// merged in file and chunk order, so the result does not depend on the thread count:
//   numbers   count, mean and M2 merged with Chan et al.'s formulas in f64; min, max. Raw u8 pixels
//             are summed exactly in integers per chunk (a vectorized loop) first.
//   z_score   mean and std (population: sqrt(M2 / n));  scale_to_0_1: min, max;  identity and
//             bucketize: the mean too (the default of a missing value)
//   bucketize quantile boundaries (quantiles.h: exact up to 2^20 values, else a sketch whose rank
//             error bound is reported)
//   vocabulary counts per value, merged; ordered most frequent first, ties by value (bytes
//             order); then frequency_threshold, then top_k
//   label     int64: min and max (classes 0 .. max); bytes: its vocabulary in value order
// Missing values are counted per feature and left out of the statistics.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tern/transform/spec.h"

namespace tern::transform {

inline constexpr int kAnalysisFormatVersion = 1;

struct FeatureAnalysis {
  std::string name;  // the output feature (spec order)
  TransformOp op = TransformOp::kIdentity;
  int64_t present = 0;  // examples holding the feature
  int64_t missing = 0;  // examples without it
  // numeric and image: over the values (an image: every pixel)
  int64_t count = 0;
  double mean = 0, std = 0, min = 0, max = 0;
  // vocabulary: kept values with their counts, in vocabulary order
  std::vector<std::pair<std::string, int64_t>> vocabulary;
  int64_t unique = 0;  // distinct values seen, before filtering
  // bucketize
  std::vector<double> boundaries;
  double quantile_rank_error = 0;  // 0: exact

  bool operator==(const FeatureAnalysis&) const = default;
};

struct LabelAnalysis {
  std::string feature;  // "" when the spec has no label
  bool bytes = false;   // bytes labels: class k is vocabulary[k]
  std::vector<std::pair<std::string, int64_t>> vocabulary;  // bytes order
  int64_t min = 0, max = 0;                                 // int64 labels
  int64_t num_classes = 0;

  // vocabulary values, or "0" .. "num_classes - 1".
  std::vector<std::string> class_names() const;
  bool operator==(const LabelAnalysis&) const = default;
};

struct TransformAnalysis {
  std::vector<std::string> files;
  int64_t records = 0;
  int64_t bytes = 0;  // TFRecord bytes read (uncompressed)
  std::vector<FeatureAnalysis> features;
  LabelAnalysis label;

  bool operator==(const TransformAnalysis&) const = default;
};

struct AnalyzeOptions {
  int threads = 0;                  // 0: every core
  int64_t chunk_records = 1024;     // records per parallel work item
  int64_t exact_quantile_limit = int64_t{1} << 20;
  int64_t sketch_k = 4096;          // quantiles.h
};

// One pass over `train_tfrecords`. InvalidArgument / DataLoss naming the file and record for bad
// records; FailedPrecondition naming the feature when a numeric feature has no values at all, or
// an int64 label is negative.
TransformAnalysis analyze(const TransformSpec& spec, const std::vector<std::string>& train_tfrecords,
                          const AnalyzeOptions& options = {});

// analysis.json: {"format": "tern.transform_analysis", "format_version": 1, "records", "bytes",
// "files", "features": [{"name", "op", "present", "missing", ...}], "label": {...}}.
std::string analysis_to_json(const TransformAnalysis& analysis);
// Reads it back and checks it against `spec` (the same features and ops in order, the fields each
// op needs, finite numbers, sorted unique boundaries, no repeated vocabulary value, counts >= 0).
// InvalidArgument naming `file` and the key.
TransformAnalysis parse_analysis_json(std::string_view text, const TransformSpec& spec,
                                      const std::string& file);

}  // namespace tern::transform
