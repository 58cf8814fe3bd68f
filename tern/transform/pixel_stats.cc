// add_pixels: blocks of 16384 pixels summed in 32-bit lanes (16384 * 255^2 < 2^32), then added to
// the 64-bit totals.
#include "tern/transform/pixel_stats.h"

#include <algorithm>

namespace tern::transform {

void add_pixels(const uint8_t* p, int64_t n, PixelSums& s) {
  constexpr int64_t kBlock = 16384;
  uint8_t lo = s.min, hi = s.max;
  for (int64_t b = 0; b < n; b += kBlock) {
    const int64_t m = std::min(kBlock, n - b);
    const uint8_t* q = p + b;
    uint32_t sum = 0, sum_sq = 0;
#pragma omp simd reduction(+ : sum, sum_sq) reduction(min : lo) reduction(max : hi)
    for (int64_t i = 0; i < m; ++i) {
      const uint32_t v = q[i];
      sum += v;
      sum_sq += v * v;
      lo = q[i] < lo ? q[i] : lo;
      hi = q[i] > hi ? q[i] : hi;
    }
    s.sum += sum;
    s.sum_sq += sum_sq;
  }
  s.count += static_cast<uint64_t>(n);
  s.min = lo;
  s.max = hi;
}

}  // namespace tern::transform
