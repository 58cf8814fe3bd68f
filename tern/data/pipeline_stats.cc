// PipelineStats: stage registry, snapshots and the text report.
#include "tern/data/pipeline_stats.h"

#include <cstdio>

#include "tern/base/error.h"

namespace tern::data {

StageCounters& PipelineStats::stage(const std::string& stage) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = stages_.find(stage);
  if (it != stages_.end()) return *it->second;
  order_.push_back(stage);
  return *stages_.emplace(stage, std::make_unique<StageCounters>()).first->second;
}

std::vector<StageStats> PipelineStats::snapshot() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<StageStats> out;
  out.reserve(order_.size());
  for (const std::string& name : order_) {
    const StageCounters& c = *stages_.find(name)->second;
    StageStats s;
    s.stage = name;
    s.elements = c.elements.load();
    const int64_t first = c.first_ns.load(), last = c.last_ns.load();
    if (first > 0 && last > first)
      s.elements_per_sec =
          1e9 * static_cast<double>(s.elements) / static_cast<double>(last - first);
    s.next_sec = 1e-9 * static_cast<double>(c.next_ns.load());
    s.wait_sec = 1e-9 * static_cast<double>(c.wait_ns.load());
    s.producer_wait_sec = 1e-9 * static_cast<double>(c.producer_wait_ns.load());
    s.tunable = c.tunable.load();
    s.buffered = c.buffered.load();
    s.skipped = c.skipped.load();
    out.push_back(std::move(s));
  }
  return out;
}

std::string PipelineStats::report() const {
  std::string out;
  char line[512];
  for (const StageStats& s : snapshot()) {
    std::snprintf(line, sizeof(line),
                  "%-48s elements=%-9lld %10.1f el/s  next=%.3fs  wait=%.3fs  producer_wait=%.3fs",
                  s.stage.c_str(), static_cast<long long>(s.elements), s.elements_per_sec,
                  s.next_sec, s.wait_sec, s.producer_wait_sec);
    out += line;
    if (s.tunable > 0) out += str_cat("  tuned=", s.tunable, "  buffered=", s.buffered);
    if (s.skipped > 0) out += str_cat("  skipped=", s.skipped);
    out += "\n";
  }
  return out;
}

}  // namespace tern::data
