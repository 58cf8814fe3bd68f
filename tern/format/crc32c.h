// CRC32C (Castagnoli, reflected polynomial 0x82F63B78, docs/formats.md) and the masked form that
// TFRecord files store. Check value: crc32c("123456789") == 0xE3069283.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace tern::format {

// Extends `crc` (the CRC of earlier bytes, 0 for none) with `n` more bytes. Uses the CPU's
// crc32 instruction (SSE4.2) where it has one.
uint32_t crc32c_extend(uint32_t crc, const void* data, size_t n);
// The same with the byte table only (what CPUs without SSE4.2 run; for tests).
uint32_t crc32c_extend_portable(uint32_t crc, const void* data, size_t n);
inline uint32_t crc32c(const void* data, size_t n) {
  return crc32c_extend(0, data, n);
}
inline uint32_t crc32c(std::string_view s) {
  return crc32c(s.data(), s.size());
}

// TFRecord stores CRCs masked: rotate right by 15, then add kCrcMaskDelta (mod 2^32).
inline constexpr uint32_t kCrcMaskDelta = 0xa282ead8u;
inline uint32_t crc32c_mask(uint32_t crc) {
  return ((crc >> 15) | (crc << 17)) + kCrcMaskDelta;
}
inline uint32_t crc32c_unmask(uint32_t masked) {
  const uint32_t rot = masked - kCrcMaskDelta;
  return (rot >> 17) | (rot << 15);
}

}  // namespace tern::format
