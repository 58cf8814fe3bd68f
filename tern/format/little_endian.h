// Fixed-width little-endian integers, as protobuf's fixed32/fixed64 fields and TFRecord's length
// and CRC words store them: appended to a string, or loaded from bytes the caller has
// bounds-checked.
#pragma once

#include <cstdint>
#include <string>

namespace tern::format {

inline void put_fixed32(std::string& out, uint32_t value) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((value >> (8 * i)) & 0xff));
}

inline void put_fixed64(std::string& out, uint64_t value) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((value >> (8 * i)) & 0xff));
}

// `p` must point at 4 (load_fixed32) or 8 (load_fixed64) readable bytes.
inline uint32_t load_fixed32(const void* p) {
  const auto* b = static_cast<const unsigned char*>(p);
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= static_cast<uint32_t>(b[i]) << (8 * i);
  return v;
}

inline uint64_t load_fixed64(const void* p) {
  const auto* b = static_cast<const unsigned char*>(p);
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= static_cast<uint64_t>(b[i]) << (8 * i);
  return v;
}

}  // namespace tern::format
