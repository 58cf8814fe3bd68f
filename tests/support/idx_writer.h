// Test helper: writes uncompressed IDX files of u8 values (the Fashion-MNIST format).
#pragma once

#include <cstdint>
#include <fstream>
#include <random>
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

// A tiny classification set as DIR/SPLIT-images.idx ([n, 8, 8]) and DIR/SPLIT-labels.idx: class k
// (of 4) has a bright quadrant k, pixels jittered by `seed`.
inline void write_quadrant_dataset(const std::string& dir, const std::string& split, uint32_t n,
                                   uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> images(n * 64), labels(n);
  for (uint32_t i = 0; i < n; ++i) {
    uint32_t k = rng() % 4;
    labels[i] = static_cast<uint8_t>(k);
    for (uint32_t p = 0; p < 64; ++p) {
      bool bright = (p / 8 / 4) * 2 + (p % 8) / 4 == k;
      images[i * 64 + p] = static_cast<uint8_t>((bright ? 180 : 20) + rng() % 60);
    }
  }
  write_idx_u8(dir + "/" + split + "-images.idx", {n, 8, 8}, images);
  write_idx_u8(dir + "/" + split + "-labels.idx", {n}, labels);
}

}  // namespace tern::testing
