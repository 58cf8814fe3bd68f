// CRC32C (Castagnoli) and the TFRecord mask, for event-file framing. tern_io keeps its own small
// copy rather than depending on tern_data (which has a faster SSE4.2 version for input files):
// the layering table allows io to depend on tensor and ir only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace tern::io {

// Extends `crc` (the CRC of earlier bytes, 0 for none) with `n` more bytes.
uint32_t crc32c_extend(uint32_t crc, const void* data, size_t n);
inline uint32_t crc32c(std::string_view s) {
  return crc32c_extend(0, s.data(), s.size());
}

// TFRecord's mask: rotate right by 15, then add 0xa282ead8 (mod 2^32).
inline constexpr uint32_t kCrcMaskDelta = 0xa282ead8u;
inline uint32_t mask_crc(uint32_t crc) {
  return ((crc >> 15) | (crc << 17)) + kCrcMaskDelta;
}
inline uint32_t unmask_crc(uint32_t masked) {
  uint32_t rot = masked - kCrcMaskDelta;
  return (rot >> 17) | (rot << 15);
}

}  // namespace tern::io
