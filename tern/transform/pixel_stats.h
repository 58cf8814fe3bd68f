// The hot loop of analyzing images: count, sum, sum of squares, min and max of raw u8 pixels,
// exact in integers. Written for the compiler to vectorize (`omp simd` reductions over blocks
// with 32-bit accumulators; pixel_stats.cc is built with -fopenmp-simd and -O3): about one pass
// over the bytes at memory speed (BENCHMARKS.md, "Transform analyze").
#pragma once

#include <cstdint>

namespace tern::transform {

struct PixelSums {
  uint64_t count = 0, sum = 0, sum_sq = 0;
  uint8_t min = 255, max = 0;
};

// Adds the n pixels at p.
void add_pixels(const uint8_t* p, int64_t n, PixelSums& s);

}  // namespace tern::transform
