// The running summaries behind compute_statistics (statistics.h): one StatsAccumulator per block
// of records, merged in file order into the split's, then finished into DatasetStatistics.
// Internal to tern/pipeline (statistics.cc and its test); not an interface of its own.
#pragma once

#include <array>
#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "tern/format/proto_reader.h"
#include "tern/pipeline/example_scan.h"
#include "tern/pipeline/sketches.h"
#include "tern/pipeline/statistics.h"

namespace tern::pipeline::stats_internal {

// Hash and equality that look std::string keys up by std::string_view (no temporary string).
struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};
template <typename V>
using StringMap = std::unordered_map<std::string, V, StringHash, std::equal_to<>>;

// Sum of `n` bytes (SSE2 sums of absolute differences where available).
uint64_t sum_u8(const uint8_t* p, size_t n);
// Adds the sum of each of `channels` interleaved channels of `pixels` (n bytes) to sums[0..c).
void sum_channels_u8(const uint8_t* pixels, size_t n, int64_t channels, uint64_t* sums);

class NumericAccumulator {
 public:
  void add(double v, const StatisticsOptions& o) {
    if (v != v) {
      ++nan_;
      return;
    }
    if (v - v != 0) {  // +-inf
      ++infinite_;
      return;
    }
    ++finite_;
    const double delta = v - mean_;
    mean_ += delta / static_cast<double>(finite_);
    m2_ += delta * (v - mean_);
    if (v < min_) min_ = v;
    if (v > max_) max_ = v;
    if (v == 0) ++zeros_;
    if (sketch_) {
      sketch_->add(v);
    } else {
      values_.push_back(v);
      if (static_cast<int64_t>(values_.size()) > o.max_exact_values) to_sketch(o);
    }
  }
  void merge(NumericAccumulator&& later, const StatisticsOptions& o);
  NumericStatistics finish(const StatisticsOptions& o);

 private:
  void to_sketch(const StatisticsOptions& o);

  int64_t finite_ = 0, nan_ = 0, infinite_ = 0, zeros_ = 0;
  double mean_ = 0, m2_ = 0;
  double min_ = std::numeric_limits<double>::infinity();
  double max_ = -std::numeric_limits<double>::infinity();
  std::vector<double> values_;  // exact mode
  std::unique_ptr<QuantileSketch> sketch_;
};

class BytesAccumulator {
 public:
  void add(std::string_view v, const StatisticsOptions& o) {
    ++values_;
    const auto len = static_cast<int64_t>(v.size());
    total_length_ += len;
    if (values_ == 1 || len < min_length_) min_length_ = len;
    if (len > max_length_) max_length_ = len;
    if (auto it = counts_.find(v); it != counts_.end()) {
      ++it->second;
    } else if (static_cast<int64_t>(counts_.size()) < o.max_value_counts) {
      counts_.emplace(std::string(v), 1);
    } else {
      overflow();
      ++other_;
    }
    if (distinct_) distinct_->add(v);
  }
  void merge(BytesAccumulator&& later, const StatisticsOptions& o);
  BytesStatistics finish(const StatisticsOptions& o) const;

 private:
  // Past the cap: from now on every value also goes into the distinct-value estimate.
  void overflow();

  int64_t values_ = 0, total_length_ = 0, min_length_ = 0, max_length_ = 0, other_ = 0;
  StringMap<int64_t> counts_;
  std::unique_ptr<DistinctCounter> distinct_;  // once counts_ is full
};

class ImageAccumulator {
 public:
  // One image. `format` is image/format's value (empty if absent); height / width / channels
  // are the companions' values (-1 if absent); `decode` asks for the pixels of a PNG / JPEG.
  void add(std::string_view bytes, std::string_view format, int64_t height, int64_t width,
           int64_t channels, bool decode);
  void merge(ImageAccumulator&& later);
  ImageStatistics finish() const;

 private:
  void add_pixels(const uint8_t* pixels, size_t n, int64_t channels);

  struct ChannelSums {
    std::vector<uint64_t> sums;
    int64_t pixels = 0;  // per channel
    int64_t images = 0;
  };
  std::map<std::string, int64_t, std::less<>> formats_;
  std::map<std::tuple<int64_t, int64_t, int64_t>, int64_t> shapes_;
  std::map<int64_t, ChannelSums> sums_;  // by channel count
  int64_t images_ = 0, invalid_ = 0, not_decoded_ = 0, encoded_bytes_ = 0;
};

// The statistics of a run of records (a block, or a whole split after merging).
class StatsAccumulator {
 public:
  explicit StatsAccumulator(const StatisticsOptions& options) : o_(&options) {}

  // One serialized tf.train.Example at byte offset `offset` of `file` (for error messages);
  // `decode_images`: PNG / JPEG images of this record are decoded for channel means.
  void add_record(std::string_view record, size_t offset, const std::string& file,
                  bool decode_images);
  // Merges the statistics of records that come after this one's.
  void merge(StatsAccumulator&& later);
  // Sorts the kept values: call once, at the end.
  DatasetStatistics finish();
  int64_t examples() const { return examples_; }

 private:
  struct Feature {
    std::string name;
    int64_t present = 0, values = 0, min_values = 0, max_values = 0;
    std::array<int64_t, 4> kinds{};  // examples by ValueKind
    NumericAccumulator numeric;
    BytesAccumulator bytes;
    std::unique_ptr<ImageAccumulator> image;        // image features only
    std::array<int, 4> companions{-1, -1, -1, -1};  // height, width, channels, format
    std::array<std::string, 4> companion_names;
    int64_t stamp = -1;  // the record whose entry `slot` holds
    int slot = -1;
  };
  // A feature of the current record: its canonical list, or a reader over its map entry.
  struct Entry {
    int feature;
    bool canonical;
    CanonicalEntry list;
    format::ProtoReader reader;
  };

  int feature_index(std::string_view key, size_t position);
  // Adds the entry of feature `key` to entries_ (a repeated key replaces the earlier entry).
  void add_entry(std::string_view key, Entry entry);
  int add_feature(std::string_view key);
  void accumulate(const Entry& e, bool decode_images);
  // The first int64 / bytes value of feature `index` in the current record, if it holds one.
  int64_t companion_int(int index) const;
  std::string_view companion_bytes(int index) const;
  int resolve(Feature& f, int which);

  const StatisticsOptions* o_;
  int64_t examples_ = 0;
  std::vector<std::unique_ptr<Feature>> features_;
  StringMap<int> index_;
  std::vector<int> predicted_;  // the feature at each entry position of the previous record
  std::vector<Entry> entries_;
};

}  // namespace tern::pipeline::stats_internal
