// AutotuneKnob: a parallelism or buffer size chosen from measurements. Each consumer request
// reports whether it had to wait for the producer; after every window of requests the knob
// grows by one step when the consumer waited on more than a tenth of them, up to its cap.
// A consumer that never waits means the producer keeps up, so the knob stays put (it does not
// shrink: threads and buffers already made cost little while idle).
#pragma once

#include <atomic>
#include <cstdint>

namespace tern::data {

class AutotuneKnob {
 public:
  // A fixed value when `tuned` is false; otherwise starts at `initial` and may grow to `cap`.
  AutotuneKnob(bool tuned, int64_t initial, int64_t cap);

  int64_t value() const { return value_.load(std::memory_order_relaxed); }
  int64_t cap() const { return cap_; }
  bool tuned() const { return tuned_; }
  // One consumer request; returns true if the value changed.
  bool record(bool waited);

  static constexpr int64_t kWindow = 16;

 private:
  bool tuned_;
  int64_t cap_;
  std::atomic<int64_t> value_;
  int64_t requests_ = 0;
  int64_t waits_ = 0;
};

}  // namespace tern::data
