// Loops the max pooling gradients share (max_pool_grad_cpu.cc, pool_argmax_cpu.cc): ref's rule for
// a window's maximum as a bool and as a bit mask, and the zeroing of dx where no window reaches.
// always_inline: each kernel compiles them with its own target (x86-64-v3 or its AVX-512 loops).
#pragma once

#include <cstdint>
#include <cstring>

#include "tern/ops/conv_geometry.h"

namespace tern::cpu::pool {

// As ref: v takes the best's place if larger, or if it is the window's first NaN.
[[gnu::always_inline]] inline bool beats(float v, float best) {
  return (v > best) | ((v != v) & (best == best));
}

// beats() as an all-ones / all-zeros mask of `Bits` (selects on bools left such loops scalar).
template <typename Bits>
[[gnu::always_inline]] inline Bits beats_mask(float v, float best) {
  Bits larger = Bits(0) - static_cast<Bits>(v > best);
  Bits v_nan = Bits(0) - static_cast<Bits>(v != v);
  Bits best_number = Bits(0) - static_cast<Bits>(best == best);
  return larger | (v_nan & best_number);
}

// Columns [w_begin, w_end) of an NHWC row of `c` channels set to +0.
template <typename T>
[[gnu::always_inline]] inline void zero_cols(T* row, int64_t c, int64_t w_begin, int64_t w_end) {
  if (w_end > w_begin) {
    std::memset(static_cast<void*>(row + w_begin * c), 0, sizeof(T) * (w_end - w_begin) * c);
  }
}

// The input rows no window covers (stride > ksize, or rows past the last window) set to +0, for
// every image: a gradient written window by window leaves them untouched.
template <typename T>
void zero_uncovered_rows(const ops::Pool2dGeometry& g, T* dx) {
  const int64_t row = g.w * g.c;
  for (int64_t h = 0; h < g.h; ++h) {
    const int64_t oh = (h + g.pad_top) / g.stride_h;
    const bool covered = oh < g.out_h && h + g.pad_top - oh * g.stride_h < g.kh;
    if (covered) continue;
    for (int64_t n = 0; n < g.n; ++n)
      std::memset(static_cast<void*>(dx + (n * g.h + h) * row), 0, sizeof(T) * row);
  }
}

}  // namespace tern::cpu::pool
