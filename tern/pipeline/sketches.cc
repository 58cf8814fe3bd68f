// QuantileSketch (DDSketch) and DistinctCounter (HyperLogLog); see sketches.h.
#include "tern/pipeline/sketches.h"

#include <bit>
#include <cmath>

#include "tern/base/error.h"
#include "tern/pipeline/stable_hash.h"

namespace tern::pipeline {

// --- QuantileSketch ---

QuantileSketch::QuantileSketch(double relative_accuracy)
    : alpha_(relative_accuracy),
      gamma_((1 + relative_accuracy) / (1 - relative_accuracy)),
      log_gamma_(std::log(gamma_)) {
  TERN_CHECK_ARG(relative_accuracy > 0 && relative_accuracy < 1,
                 "quantile sketch: relative accuracy must be in (0, 1), got ", relative_accuracy);
}

void QuantileSketch::add(double value) {
  ++count_;
  if (value == 0) {
    ++zeros_;
    return;
  }
  const int key = static_cast<int>(std::ceil(std::log(std::fabs(value)) / log_gamma_));
  ++(value > 0 ? positive_ : negative_)[key];
}

void QuantileSketch::merge(const QuantileSketch& other) {
  TERN_CHECK(other.alpha_ == alpha_, "merging sketches of different accuracy");
  for (const auto& [k, n] : other.positive_) positive_[k] += n;
  for (const auto& [k, n] : other.negative_) negative_[k] += n;
  zeros_ += other.zeros_;
  count_ += other.count_;
}

double QuantileSketch::bucket_value(int key) const {
  return 2 * std::pow(gamma_, key) / (gamma_ + 1);
}

std::vector<std::pair<double, int64_t>> QuantileSketch::buckets() const {
  std::vector<std::pair<double, int64_t>> out;
  for (auto it = negative_.rbegin(); it != negative_.rend(); ++it)
    out.emplace_back(-bucket_value(it->first), it->second);
  if (zeros_ > 0) out.emplace_back(0.0, zeros_);
  for (const auto& [k, n] : positive_) out.emplace_back(bucket_value(k), n);
  return out;
}

double QuantileSketch::quantile(double q) const {
  if (count_ == 0) return 0;
  const double rank = q * static_cast<double>(count_ - 1);
  int64_t seen = 0;
  double last = 0;
  for (const auto& [value, n] : buckets()) {
    seen += n;
    last = value;
    if (static_cast<double>(seen) > rank) return value;
  }
  return last;
}

// --- DistinctCounter ---

void DistinctCounter::add(std::string_view value) {
  const uint64_t h = stable_hash64(value);
  const size_t index = h >> (64 - kBits);
  // The rank of the first 1 bit in the remaining bits (a sentinel bit bounds it).
  const uint64_t rest = (h << kBits) | (uint64_t{1} << (kBits - 1));
  const auto rank = static_cast<uint8_t>(std::countl_zero(rest) + 1);
  if (rank > registers_[index]) registers_[index] = rank;
}

void DistinctCounter::merge(const DistinctCounter& other) {
  for (size_t i = 0; i < registers_.size(); ++i)
    if (other.registers_[i] > registers_[i]) registers_[i] = other.registers_[i];
}

int64_t DistinctCounter::estimate() const {
  const double m = static_cast<double>(registers_.size());
  double sum = 0;
  int zero_registers = 0;
  for (uint8_t r : registers_) {
    sum += std::ldexp(1.0, -static_cast<int>(r));
    if (r == 0) ++zero_registers;
  }
  const double alpha = 0.7213 / (1 + 1.079 / m);
  double e = alpha * m * m / sum;
  if (e <= 2.5 * m && zero_registers > 0) e = m * std::log(m / zero_registers);  // linear counting
  return static_cast<int64_t>(std::llround(e));
}

}  // namespace tern::pipeline
