// Test helper: writes uncompressed IDX files of u8 values (the Fashion-MNIST format).
#pragma once

#include <cstdint>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

namespace tern::testing {

// Magic 0x00000800 | rank, big-endian dims, then `data` (u8 values, row-major).
inline void write_idx_u8(const std::string& path, const std::vector<uint32_t>& dims,
                         std::string_view data) {
  std::string out = {0, 0, 0x08, static_cast<char>(dims.size())};
  for (uint32_t d : dims) {
    for (int s = 24; s >= 0; s -= 8) out += static_cast<char>((d >> s) & 0xff);
  }
  out.append(data);
  std::ofstream(path, std::ios::binary) << out;
}

inline void write_idx_u8(const std::string& path, const std::vector<uint32_t>& dims,
                         const std::vector<uint8_t>& data) {
  write_idx_u8(path, dims,
               std::string_view(reinterpret_cast<const char*>(data.data()), data.size()));
}

}  // namespace tern::testing
