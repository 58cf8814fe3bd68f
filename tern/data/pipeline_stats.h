// Per-stage statistics of a running input pipeline: elements produced, throughput, time spent
// inside next() and time blocked waiting on a background producer; what AUTOTUNE measures.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace tern::data {

// Live counters of one stage, shared by every iterator instance of that stage (e.g. the input
// iterators a repeat recreates each epoch). Times are nanoseconds.
struct StageCounters {
  std::atomic<int64_t> elements{0};
  std::atomic<int64_t> next_ns{0};           // inside next(), inputs included
  std::atomic<int64_t> wait_ns{0};           // consumer blocked on an empty buffer / busy workers
  std::atomic<int64_t> producer_wait_ns{0};  // producer blocked on a full buffer
  std::atomic<int64_t> first_ns{0};          // first next() call, 0 before
  std::atomic<int64_t> last_ns{0};           // last element produced
  std::atomic<int64_t> tunable{0};           // current parallelism or buffer size, 0 if none
  std::atomic<int64_t> buffered{0};          // results held ahead of the consumer now
  std::atomic<int64_t> skipped{0};           // corrupt records skipped (readers)
};

// A point-in-time copy of one stage's counters.
struct StageStats {
  std::string stage;  // path from the root, e.g. "Prefetch/Batch/Map/Range"
  int64_t elements = 0;
  double elements_per_sec = 0;
  double next_sec = 0;
  double wait_sec = 0;
  double producer_wait_sec = 0;
  int64_t tunable = 0;
  int64_t buffered = 0;
  int64_t skipped = 0;
};

class PipelineStats {
 public:
  // The counters for `stage`, created on first use; the pointer stays valid for this object's life.
  StageCounters& stage(const std::string& stage);
  std::vector<StageStats> snapshot() const;
  // One line per stage, root first.
  std::string report() const;

 private:
  mutable std::mutex mu_;
  std::vector<std::string> order_;
  std::map<std::string, std::unique_ptr<StageCounters>, std::less<>> stages_;
};

}  // namespace tern::data
