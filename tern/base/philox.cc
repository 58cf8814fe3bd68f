// Philox4x32-10 rounds and the stateful stream.
#include "tern/base/philox.h"

namespace tern {
namespace {

constexpr uint32_t kMul0 = 0xD2511F53;
constexpr uint32_t kMul1 = 0xCD9E8D57;
constexpr uint32_t kWeyl0 = 0x9E3779B9;
constexpr uint32_t kWeyl1 = 0xBB67AE85;

inline void mulhilo(uint32_t a, uint32_t b, uint32_t* hi, uint32_t* lo) {
  uint64_t p = static_cast<uint64_t>(a) * b;
  *hi = static_cast<uint32_t>(p >> 32);
  *lo = static_cast<uint32_t>(p);
}

}  // namespace

Philox::Block Philox::operator()(uint64_t counter_lo, uint64_t counter_hi) const {
  Block c = {static_cast<uint32_t>(counter_lo), static_cast<uint32_t>(counter_lo >> 32),
             static_cast<uint32_t>(counter_hi), static_cast<uint32_t>(counter_hi >> 32)};
  uint32_t k0 = key_[0], k1 = key_[1];
  for (int round = 0; round < 10; ++round) {
    uint32_t hi0, lo0, hi1, lo1;
    mulhilo(kMul0, c[0], &hi0, &lo0);
    mulhilo(kMul1, c[2], &hi1, &lo1);
    c = {hi1 ^ c[1] ^ k0, lo1, hi0 ^ c[3] ^ k1, lo0};
    k0 += kWeyl0;
    k1 += kWeyl1;
  }
  return c;
}

uint32_t PhiloxStream::next_u32() {
  if (used_ == 4) {
    block_ = rng_(counter_++, hi_);
    used_ = 0;
  }
  return block_[used_++];
}

uint64_t PhiloxStream::next_below(uint64_t n) {
  if (n <= 1) return 0;
  // Rejection sampling removes modulo bias.
  uint64_t limit = UINT64_MAX - UINT64_MAX % n;
  uint64_t x;
  do {
    x = next_u64();
  } while (x >= limit);
  return x % n;
}

void PhiloxStream::seek(uint64_t position) {
  counter_ = position / 4;
  used_ = 4;
  int skip = static_cast<int>(position % 4);
  if (skip > 0) {
    block_ = rng_(counter_++, hi_);
    used_ = skip;
  }
}

}  // namespace tern
