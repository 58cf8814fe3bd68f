// Quantile boundaries of a stream of numbers, from partial results merged in stream order (the
// analyzers run over chunks in parallel). Exact while the values fit `exact_limit`; past that a
// mergeable sketch in the style of Manku, Rajagopalan and Lindsay (1998):
//
//   level l holds items of weight 2^l. A value enters level 0. A level holding 2k or more items
//   is compacted: sorted, one item held back if their count is odd, and every other one of the
//   rest (starting at offset 0 and 1 in turn, per level) moves up a level with twice the weight.
//   Merging appends level to level, then compacts.
//
// Error: one compaction at level l moves any rank by at most 2^l, and levels fill with at most
// n / (2k * 2^l) compactions each, so every rank is off by at most sum over levels of n / (2k),
// i.e. (levels used) * n / (2k); rank_error_bound() reports the bound accumulated by the actual
// compactions, as a fraction of n (0 while exact). With k = 4096 that is under 0.2% of n below
// 2^26 values. Deterministic: the same values in the same chunks give the same boundaries.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace tern::transform {

class QuantileAccumulator {
 public:
  explicit QuantileAccumulator(int64_t exact_limit = int64_t{1} << 20, int64_t k = 4096);

  // A value (callers leave out NaN).
  void add(double v);
  // Appends `other`'s values (which come after this one's in the stream).
  void merge(const QuantileAccumulator& other);

  int64_t count() const { return n_; }
  bool exact() const { return sketch_levels_.empty(); }
  // For num_buckets >= 2: boundary i (i = 1 .. num_buckets - 1) is the value of rank
  // floor(i * n / num_buckets) (0-based, ascending); repeated boundaries are dropped. Empty when
  // there are no values.
  std::vector<double> boundaries(int64_t num_buckets) const;
  // The rank error bound as a fraction of count() (0 when exact).
  double rank_error_bound() const { return n_ == 0 ? 0.0 : error_ / static_cast<double>(n_); }

 private:
  void to_sketch();
  void push(size_t level, double v);
  void compact(size_t level);

  int64_t limit_, k_;
  int64_t n_ = 0;
  double error_ = 0;  // accumulated rank error bound (in values)
  std::vector<double> exact_;
  std::vector<std::vector<double>> sketch_levels_;  // empty while exact
  std::vector<uint8_t> offset_;                     // per level: which half the next compaction keeps
};

}  // namespace tern::transform
