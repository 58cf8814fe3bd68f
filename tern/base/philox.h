// Philox4x32-10 counter-based RNG (Salmon et al., SC'11): the same (seed, counter) always gives the
// same four 32-bit words, so random ops are reproducible per seed and parallelize without state.
// The rounds, the mapping of (seed, counter) onto Philox's key and counter words, and the known
// answers it is tested against: docs/formats.md, "Philox4x32-10".
#pragma once

#include <array>
#include <cstdint>

namespace tern {

class Philox {
 public:
  using Block = std::array<uint32_t, 4>;

  explicit Philox(uint64_t seed)
      : key_{static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)} {}

  // Four random words for the 128-bit counter (lo, hi).
  Block operator()(uint64_t counter_lo, uint64_t counter_hi = 0) const;

  // Uniform float in [0, 1) from one word (24 mantissa bits).
  static float to_unit_float(uint32_t x) {
    return static_cast<float>(x >> 8) * (1.0f / 16777216.0f);
  }
  // Uniform double in [0, 1) from two words (53 bits).
  static double to_unit_double(uint32_t hi, uint32_t lo) {
    uint64_t v = (static_cast<uint64_t>(hi) << 21) ^ (lo >> 11);
    return static_cast<double>(v & ((1ULL << 53) - 1)) * (1.0 / 9007199254740992.0);
  }

 private:
  std::array<uint32_t, 2> key_;
};

// A stateful stream over Philox blocks, for host-side sampling (shuffles, initializers).
class PhiloxStream {
 public:
  explicit PhiloxStream(uint64_t seed, uint64_t stream = 0) : rng_(seed), hi_(stream) {}
  uint32_t next_u32();
  uint64_t next_u64() { return (static_cast<uint64_t>(next_u32()) << 32) | next_u32(); }
  float next_float() { return Philox::to_unit_float(next_u32()); }
  double next_double() {
    uint32_t a = next_u32();
    return Philox::to_unit_double(a, next_u32());
  }
  // Uniform integer in [0, n).
  uint64_t next_below(uint64_t n);
  // Position, for saving and restoring the stream exactly.
  // (counter_ counts blocks drawn; used_ words of the last one are consumed, 4 before any.)
  uint64_t position() const { return counter_ * 4 + used_ - 4; }
  void seek(uint64_t position);

 private:
  Philox rng_;
  uint64_t hi_;
  uint64_t counter_ = 0;
  int used_ = 4;
  Philox::Block block_{};
};

}  // namespace tern
