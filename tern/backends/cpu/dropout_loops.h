// The dropout op's f32 loops, for kernels that draw or apply dropout's mask inside a larger op
// (the fused attention kernel): the tiles and loops dropout_cpu.cc's kernels run, so a mask drawn
// here is bit for bit the dropout op's for the same (seed, offset, element index).
#pragma once

#include <cstdint>

namespace tern::cpu {

// The dropout op's f32 tiles over elements [first, first + n) of a tensor (first a multiple of
// 64): y[i] = x[i] * scale where element first + i is kept (its word >= threshold), else +0, and
// the packed mask (bit i % 32 of mask[i / 32] = element first + i kept; bits past n clear).
// x, y and mask start at element `first`. One thread.
void dropout_f32(uint64_t seed, uint64_t offset, uint32_t threshold, float scale, int64_t first,
                 int64_t n, const float* x, float* y, uint32_t* mask);

// dropout_apply's f32 loop: y[i] = x[i] * scale where bit i % 32 of mask[i / 32] is set, else +0,
// for i < n. y may be x. One thread.
void dropout_apply_f32(const uint32_t* mask, int64_t n, float scale, const float* x, float* y);

}  // namespace tern::cpu
