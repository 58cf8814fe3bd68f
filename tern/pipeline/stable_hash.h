// stable_hash64: a 64-bit hash of bytes that is the same on every run and machine (no seed, no
// pointer values): FNV-1a 64 over the bytes, then MurmurHash3's fmix64 finalizer so that every
// output bit depends on every input bit (FNV-1a alone leaves the high bits of short keys poorly
// mixed, and the split and HyperLogLog use the high bits). Used for the ingest split and the
// distinct-value estimate; not a cryptographic hash.
#pragma once

#include <cstdint>
#include <string_view>

namespace tern::pipeline {

inline uint64_t fmix64(uint64_t h) {
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdULL;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ULL;
  h ^= h >> 33;
  return h;
}

inline uint64_t stable_hash64(std::string_view bytes) {
  uint64_t h = 0xcbf29ce484222325ULL;  // FNV-1a 64 offset basis
  for (unsigned char c : bytes) {
    h ^= c;
    h *= 0x100000001b3ULL;  // FNV-1a 64 prime
  }
  return fmix64(h);
}

}  // namespace tern::pipeline
