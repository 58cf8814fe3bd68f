// QuantileAccumulator: exact values, then the level sketch.
#include "tern/transform/quantiles.h"

#include <algorithm>
#include <utility>

namespace tern::transform {

QuantileAccumulator::QuantileAccumulator(int64_t exact_limit, int64_t k)
    : limit_(exact_limit), k_(std::max<int64_t>(k, 2)) {}

void QuantileAccumulator::add(double v) {
  ++n_;
  if (exact()) {
    exact_.push_back(v);
    if (static_cast<int64_t>(exact_.size()) > limit_) to_sketch();
    return;
  }
  push(0, v);
}

void QuantileAccumulator::to_sketch() {
  std::vector<double> values = std::move(exact_);
  exact_.clear();
  sketch_levels_.assign(1, {});
  offset_.assign(1, 0);
  for (double v : values) push(0, v);
}

void QuantileAccumulator::push(size_t level, double v) {
  sketch_levels_[level].push_back(v);
  if (static_cast<int64_t>(sketch_levels_[level].size()) >= 2 * k_) compact(level);
}

void QuantileAccumulator::compact(size_t level) {
  std::vector<double> items = std::move(sketch_levels_[level]);
  sketch_levels_[level].clear();
  std::sort(items.begin(), items.end());
  if (items.size() % 2 == 1) {  // the largest stays here, with its weight
    sketch_levels_[level].push_back(items.back());
    items.pop_back();
  }
  if (sketch_levels_.size() == level + 1) {
    sketch_levels_.emplace_back();
    offset_.push_back(0);
  }
  const size_t start = offset_[level];
  offset_[level] ^= 1;
  error_ += static_cast<double>(int64_t{1} << std::min<size_t>(level, 62));
  for (size_t i = start; i < items.size(); i += 2) push(level + 1, items[i]);
}

void QuantileAccumulator::merge(const QuantileAccumulator& other) {
  if (exact() && other.exact() &&
      static_cast<int64_t>(exact_.size() + other.exact_.size()) <= limit_) {
    exact_.insert(exact_.end(), other.exact_.begin(), other.exact_.end());
    n_ += other.n_;
    return;
  }
  if (exact()) to_sketch();
  n_ += other.n_;
  error_ += other.error_;
  if (other.exact()) {
    for (double v : other.exact_) push(0, v);
    return;
  }
  for (size_t l = 0; l < other.sketch_levels_.size(); ++l) {
    if (sketch_levels_.size() <= l) {
      sketch_levels_.emplace_back();
      offset_.push_back(0);
    }
    std::vector<double>& mine = sketch_levels_[l];
    mine.insert(mine.end(), other.sketch_levels_[l].begin(), other.sketch_levels_[l].end());
    if (static_cast<int64_t>(mine.size()) >= 2 * k_) compact(l);
  }
}

std::vector<double> QuantileAccumulator::boundaries(int64_t num_buckets) const {
  std::vector<std::pair<double, int64_t>> items;  // value, weight
  if (exact()) {
    for (double v : exact_) items.emplace_back(v, 1);
  } else {
    for (size_t l = 0; l < sketch_levels_.size(); ++l) {
      for (double v : sketch_levels_[l]) items.emplace_back(v, int64_t{1} << std::min<size_t>(l, 62));
    }
  }
  std::vector<double> out;
  if (items.empty() || num_buckets < 2) return out;
  std::sort(items.begin(), items.end());
  int64_t total = 0;
  for (const auto& it : items) total += it.second;
  size_t pos = 0;
  int64_t cumulative = items[0].second;  // inclusive weight up to items[pos]
  for (int64_t i = 1; i < num_buckets; ++i) {
    // floor(i * total / num_buckets) without overflow for any realistic total.
    const int64_t rank = static_cast<int64_t>(static_cast<__int128>(i) * total / num_buckets);
    while (cumulative <= rank && pos + 1 < items.size()) cumulative += items[++pos].second;
    if (out.empty() || out.back() != items[pos].first) out.push_back(items[pos].first);
  }
  return out;
}

}  // namespace tern::transform
