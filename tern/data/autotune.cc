// AutotuneKnob: windowed wait-fraction hill climbing.
#include "tern/data/autotune.h"

#include <algorithm>

namespace tern::data {

AutotuneKnob::AutotuneKnob(bool tuned, int64_t initial, int64_t cap)
    : tuned_(tuned),
      cap_(std::max<int64_t>(cap, 1)),
      value_(std::clamp<int64_t>(initial, 1, cap_)) {}

bool AutotuneKnob::record(bool waited) {
  if (!tuned_) return false;
  ++requests_;
  if (waited) ++waits_;
  if (requests_ < kWindow) return false;
  const bool grow = waits_ * 10 > requests_;
  requests_ = 0;
  waits_ = 0;
  const int64_t v = value();
  if (!grow || v >= cap_) return false;
  value_.store(v + 1, std::memory_order_relaxed);
  return true;
}

}  // namespace tern::data
