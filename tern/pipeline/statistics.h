// StatisticsGen: descriptive statistics of a split (TFRecord files of tf.train.Example) in one
// pass, and their JSON form (statistics.json, docs/pipeline.md "Statistics").
//
//   DatasetStatistics s = compute_statistics({"train/data-00000-of-00001.tfrecord"});
//   io::write_file_atomically("statistics.json", statistics_to_json(s));
//
// Per feature: how many examples hold it and how many values each; numeric features (int64 and
// float lists): min, max, mean, standard deviation (Welford, merged with Chan's formula), zeros,
// NaN / infinity counts, quantiles and an equal-width histogram; bytes features: distinct values,
// the top-k, every value's count up to a cap (for the validator's L-infinity distance), lengths;
// image features (`image/encoded` beside image/format, height, width, channels): shapes, formats,
// per-channel means (raw pixels summed as integers; PNG / JPEG decoded, a bounded sample).
//
// Quantiles are exact (every finite value kept, sorted, linear interpolation between closest
// ranks: NumPy's default) while a feature has at most `max_exact_values` values; past that the
// values go into a DDSketch (log-spaced buckets, gamma = (1 + a) / (1 - a)), mergeable across
// threads, whose quantiles are within a relative error a = `sketch_relative_accuracy` of the true
// value of that rank; the histogram is then built from the sketch's buckets.
//
// The files are read once, in blocks of whole records handed to every core; each block is
// summarized on its own and the block summaries are merged in file order, so the result does not
// depend on the thread count. Raw-pixel sums and Example parsing allocate nothing per record.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tern::pipeline {

enum class FeatureType : uint8_t { kInt, kFloat, kBytes, kImage };

// "int", "float", "bytes", "image".
std::string_view feature_type_name(FeatureType type);
// nullopt for anything else.
std::optional<FeatureType> parse_feature_type(std::string_view name);

struct HistogramBin {
  double low = 0, high = 0;  // [low, high); the last bin includes high
  double count = 0;
  bool operator==(const HistogramBin&) const = default;
};

struct NumericStatistics {
  int64_t finite = 0;  // values that are neither NaN nor infinite (the rest below)
  int64_t nan = 0, infinite = 0;
  double min = 0, max = 0, mean = 0, std_dev = 0;  // over the finite values (population std)
  int64_t zeros = 0;
  // (q, value) for q in StatisticsOptions::quantiles; exact or from the sketch (quantiles_exact).
  std::vector<std::pair<double, double>> quantiles;
  bool quantiles_exact = true;
  std::vector<HistogramBin> histogram;  // equal width over [min, max]; one bin when min == max
  // Every distinct finite value with its count, while the quantiles are exact and there are at
  // most StatisticsOptions::max_distinct_numbers of them (integer codes, small data): the
  // validator counts values out of a range exactly from it.
  std::vector<std::pair<double, int64_t>> value_counts;
  bool operator==(const NumericStatistics&) const = default;
};

struct BytesStatistics {
  int64_t unique = 0;        // distinct values (exact while value_counts is complete)
  bool unique_exact = true;  // false: a HyperLogLog estimate (about 1.6% error)
  std::vector<std::pair<std::string, int64_t>> top_values;  // by count, then value
  // Every value's count while there are at most max_value_counts distinct ones; past that the
  // first max_value_counts values seen keep counting and the others are only counted in
  // other_values.
  std::map<std::string, int64_t> value_counts;
  bool value_counts_complete = true;
  int64_t other_values = 0;
  double avg_length = 0;
  int64_t min_length = 0, max_length = 0;
  bool operator==(const BytesStatistics&) const = default;
};

struct ImageShapeCount {
  int64_t height = 0, width = 0, channels = 0;
  int64_t count = 0;
  bool operator==(const ImageShapeCount&) const = default;
};

struct ImageStatistics {
  std::map<std::string, int64_t> formats;  // image/format (or the detected one): count
  std::vector<ImageShapeCount> shapes;     // distinct shapes, most common first (at most 20)
  int64_t invalid = 0;  // raw images whose byte count does not match their shape, or undecodable
  // Means of each channel's pixel values (0..255) over the images measured, for the most common
  // channel count; raw images are all measured, PNG / JPEG ones up to max_decoded_images.
  std::vector<double> channel_means;
  int64_t images_measured = 0;
  bool sampled = false;  // some PNG / JPEG images were not decoded for channel_means
  double avg_bytes = 0;  // encoded size
  bool operator==(const ImageStatistics&) const = default;
};

struct FeatureStatistics {
  std::string name;
  FeatureType type = FeatureType::kFloat;  // the kind most examples hold (image: see above)
  int64_t count = 0;                       // examples holding the feature (an empty list counts)
  int64_t missing = 0;                     // examples without it
  int64_t num_values = 0;                  // values over all examples
  int64_t min_values = 0, max_values = 0;  // values per example, over the examples holding it
  double avg_values = 0;
  // Examples whose list is of another kind than `type` (e.g. float_list in an int feature), by
  // type name; empty when every example agrees.
  std::map<std::string, int64_t> other_types;
  std::optional<NumericStatistics> numeric;  // kInt, kFloat
  std::optional<BytesStatistics> bytes;      // kBytes
  std::optional<ImageStatistics> image;      // kImage
  bool operator==(const FeatureStatistics&) const = default;
};

struct DatasetStatistics {
  int64_t examples = 0;
  int64_t bytes = 0;  // bytes of the files read
  std::vector<std::string> files;
  std::vector<FeatureStatistics> features;  // sorted by name

  // nullptr if no example held `name`.
  const FeatureStatistics* find(std::string_view name) const;
  bool operator==(const DatasetStatistics&) const = default;
};

struct StatisticsOptions {
  int top_k = 20;
  int64_t max_value_counts = 10000;  // distinct values counted per bytes feature
  int histogram_bins = 20;
  std::vector<double> quantiles = {0, 0.01, 0.05, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99, 1};
  int64_t max_exact_values = 1 << 20;       // per numeric feature, then the sketch
  int64_t max_distinct_numbers = 1000;      // NumericStatistics::value_counts up to this many
  double sketch_relative_accuracy = 0.005;  // DDSketch's alpha
  // Bytes features summarized as images (with <prefix>height / width / channels / format, the
  // prefix being the name up to its last '/').
  std::vector<std::string> image_features = {"image/encoded"};
  int64_t max_decoded_images = 2000;  // PNG / JPEG images decoded for channel means, per split
  int threads = 0;                    // 0: every core
  int64_t block_bytes = 4 << 20;      // records are handed to threads in blocks of about this
  bool progress = true;               // a ProgressLine on stderr, only when it is a terminal
};

// Reads every record of `tfrecord_files` (uncompressed, GZIP or ZLIB, detected) once. Corrupt
// framing is a DataLoss naming the file and byte offset; a record that is not a tf.train.Example
// names the file, the record's index and the byte offset.
DatasetStatistics compute_statistics(const std::vector<std::string>& tfrecord_files,
                                     const StatisticsOptions& options = {});

// --- JSON (statistics.json) ---
std::string statistics_to_json(const DatasetStatistics& stats);
// Checks every key and type: a malformed file is an InvalidArgument (DataLoss for bytes that are
// not JSON) naming `name` and the key, e.g. "stats.json: features[2].numeric.mean: expected a
// number".
DatasetStatistics parse_statistics_json(std::string_view text, const std::string& name);
DatasetStatistics read_statistics_json(const std::string& path);

// A bytes value as it appears in statistics, schemas and reports: unchanged when it is valid
// UTF-8, otherwise each byte of an invalid sequence as \xHH.
std::string value_text(std::string_view bytes);

}  // namespace tern::pipeline
