// The dropout op's random words, for kernels that draw dropout's mask inside a larger op (the
// fused attention kernel): the same words dropout_cpu.cc's tiles compute, so a mask drawn here is
// bit for bit the dropout op's for the same (seed, offset, element index).
#pragma once

#include <cstdint>

namespace tern::cpu {

// out[i] = word e % 4 of Philox(seed)(e / 4, offset) for element e = first + i, i in [0, n).
// `first` must be a multiple of 64 (a tile of sixteen Philox blocks). Element e is kept by a
// dropout of `rate` iff out[e - first] >= floor(rate * 2^32). One thread; AVX-512 where the CPU
// has it (cpu_runs_v4_variants).
void dropout_words(uint64_t seed, uint64_t offset, int64_t first, int64_t n, uint32_t* out);

}  // namespace tern::cpu
