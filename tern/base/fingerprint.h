// The one string fingerprint of tern (docs/transform.md, "The fingerprint"): FNV-1a 64 over the
// bytes, as written by Fowler, Noll and Vo (offset basis 0xcbf29ce484222325, prime 0x100000001b3).
// tern tensors have no string dtype, so a categorical feature enters a graph as the i64 whose bits
// are this fingerprint; the transform's analysis, its application to TFRecords and the served
// model's DT_STRING decoder all call this function, so training and serving agree bit for bit.
// Also the 64-bit mixer the hashing ops use (splitmix64's finalizer).
#pragma once

#include <cstdint>
#include <string_view>

namespace tern {

inline constexpr uint64_t kFnv64OffsetBasis = 0xcbf29ce484222325ull;
inline constexpr uint64_t kFnv64Prime = 0x100000001b3ull;

// FNV-1a 64 of `bytes`: h = basis; for each byte b: h = (h ^ b) * prime (mod 2^64).
// fingerprint64("") == 0xcbf29ce484222325, fingerprint64("a") == 0xaf63dc4c8601ec8c.
constexpr uint64_t fingerprint64(std::string_view bytes) {
  uint64_t h = kFnv64OffsetBasis;
  for (char c : bytes) {
    h ^= static_cast<uint8_t>(c);
    h *= kFnv64Prime;
  }
  return h;
}

// The fingerprint as the i64 a graph carries (the same 64 bits, two's complement).
constexpr int64_t fingerprint64_i64(std::string_view bytes) {
  return static_cast<int64_t>(fingerprint64(bytes));
}

// splitmix64's finalizer (Steele, Lea, Flood 2014): a bijection on 64 bits with good avalanche.
constexpr uint64_t mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

}  // namespace tern
