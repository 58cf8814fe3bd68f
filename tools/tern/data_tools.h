// The work behind `tern data inspect | convert | bench`, callable without the command line (the
// tests and bench/image_pipeline_bench.cc use it directly).
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "tern/data/dataset.h"

namespace tern::tools {

// --- inspect ---
struct InspectOptions {
  int64_t records = 3;               // shown in full
  std::string format = "auto";       // auto | tfrecord | idx | csv
  std::string compression = "auto";  // auto | none | gzip | zlib (TFRecord, CSV)
};
// Counts the records of a TFRecord / IDX / CSV file and describes the first ones: feature names,
// kinds and value counts for tf.Examples (with a feature spec that parses them), dtype and shape
// for IDX, columns and inferred types for CSV.
void data_inspect(const std::string& path, const InspectOptions& options, std::ostream& out);

// --- convert ---
struct ConvertOptions {
  std::string labels;        // IDX input: the labels file
  std::string image_format;  // jpeg | png | raw (TFRecord only); empty: keep, or png
  int jpeg_quality = 95;
  int64_t height = 0, width = 0;         // resize (bilinear) before writing; 0: keep
  int channels = 0;                      // 0: keep; 1 or 3 (gray replicated to RGB)
  int64_t limit = -1;                    // convert only the first N
  std::string compression = "none";      // TFRecord output: none | gzip | zlib
  std::vector<std::string> class_names;  // image-folder output from labels: folder names
};
struct ConvertResult {
  int64_t written = 0;
  std::string summary;  // one line: what was written where
};
// IDX -> TFRecord of tf.Examples; IDX -> image folder; image folder -> TFRecord; TFRecord ->
// image folder. The direction follows from the paths: an output ending in .tfrecord (or
// .tfrecords, .tfrecord.gz) is a TFRecord, anything else an image-folder directory; an input that
// is a directory is an image folder. Examples use the TF-slim feature names: image/encoded,
// image/format, image/class/label, image/class/text, image/height, image/width, image/channels,
// image/filename.
ConvertResult data_convert(const std::string& input, const std::string& output,
                           const ConvertOptions& options);

// --- bench ---
// A pipeline in one line, stages separated by '|':
//   images DIR | shuffle 1024 | decode | crop 56 56 | flip | normalize | batch 128 | prefetch
// Sources: images DIR (image folder: path, label), files PATTERN... (paths), tfrecord FILE...
// [compression=gzip], idx IMAGES [LABELS]. Transforms: parse_example [FEATURE...] (spec inferred
// from the first record), decode [channels=C], resize H W, crop H W (random), flip (random),
// brightness MAX_DELTA, contrast LOWER UPPER, normalize [mean=A,B,C] [std=A,B,C], shuffle N
// [seed=S], batch N [drop_remainder], prefetch [N], repeat [N], take N, skip N, cache.
// Consecutive image stages in canonical order (decode, resize, crop, flip, brightness, contrast,
// normalize) run as one parallel map.
struct PipelineOptions {
  int64_t map_threads = data::kAutotune;
  uint64_t seed = 0;
};
struct Pipeline {
  data::DatasetPtr dataset;
  std::vector<std::string> stages;  // as built, e.g. "map(decode+crop+flip+normalize)"
  bool batched = false;             // elements are batches (rows = leading dim of component 0)
};
Pipeline build_pipeline(const std::string& spec, const PipelineOptions& options);

struct BenchResult {
  int64_t batches = 0, rows = 0;
  double seconds = 0;
  std::string stats;  // the iterator's per-stage report
  double rows_per_second() const { return seconds > 0 ? static_cast<double>(rows) / seconds : 0; }
};
// Runs `epochs` passes (one iterator each) and times them together, after `warmup_epochs`
// untimed passes; max_batches >= 0 stops each pass early.
BenchResult bench_pipeline(const Pipeline& p, int64_t epochs = 1, int64_t warmup_epochs = 0,
                           int64_t max_batches = -1);

}  // namespace tern::tools
