// The two mergeable sketches behind compute_statistics (statistics.h), for data past the exact
// limits:
//   QuantileSketch: DDSketch (Masson, Rim, Lee, VLDB 2019). A finite value x != 0 goes to bucket
//     ceil(log_gamma |x|) of its sign's store, gamma = (1 + a) / (1 - a); zeros are counted apart.
//     The value returned for a bucket is 2 gamma^i / (gamma + 1), within a relative error a of
//     every value the bucket holds, so quantile(q) is within a of the true value of rank
//     q * (n - 1). Merging adds bucket counts (exact: the same as one sketch of all the values).
//   DistinctCounter: HyperLogLog with 2^12 registers over stable_hash64 (standard error
//     1.04 / sqrt(4096) = 1.6%), linear counting for small cardinalities; merging takes the
//     registers' maxima.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string_view>
#include <utility>
#include <vector>

namespace tern::pipeline {

class QuantileSketch {
 public:
  explicit QuantileSketch(double relative_accuracy = 0.005);

  void add(double value);  // finite values only (callers count NaN and infinities apart)
  void merge(const QuantileSketch& other);
  int64_t count() const { return count_; }
  // The value of rank q * (count - 1) (q in [0, 1]) within the relative accuracy; 0 when empty.
  double quantile(double q) const;
  // Every bucket as (its value, count), ascending.
  std::vector<std::pair<double, int64_t>> buckets() const;
  double relative_accuracy() const { return alpha_; }

 private:
  double bucket_value(int key) const;

  double alpha_, gamma_, log_gamma_;
  std::map<int, int64_t> positive_, negative_;  // key -> count (negative: by |x|)
  int64_t zeros_ = 0, count_ = 0;
};

class DistinctCounter {
 public:
  void add(std::string_view value);
  void merge(const DistinctCounter& other);
  int64_t estimate() const;

 private:
  static constexpr int kBits = 12;
  std::array<uint8_t, 1 << kBits> registers_{};
};

}  // namespace tern::pipeline
