// CRC32C: the SSE4.2 crc32 instruction where the CPU has it (chosen at run time: the default
// build is baseline x86-64, whose byte table ran at ~170 MB/s and was most of the time of a
// statistics pass over TFRecords), a byte table otherwise. crc32c_test.cc checks both against a
// bit-at-a-time reference.
#include "tern/format/crc32c.h"

#include <array>
#include <cstring>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <nmmintrin.h>
#define TERN_CRC32C_SSE42 1
#endif

namespace tern::format {
namespace {

constexpr std::array<uint32_t, 256> make_table() {
  std::array<uint32_t, 256> t{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
    t[i] = c;
  }
  return t;
}

constexpr std::array<uint32_t, 256> kTable = make_table();

// `c` is the inverted running CRC.
uint32_t update_table(uint32_t c, const unsigned char* p, size_t n) {
  while (n > 0) {
    c = kTable[(c ^ *p++) & 0xff] ^ (c >> 8);
    --n;
  }
  return c;
}

#if defined(TERN_CRC32C_SSE42)
__attribute__((target("sse4.2"))) uint32_t update_sse42(uint32_t c, const unsigned char* p,
                                                        size_t n) {
  uint64_t c64 = c;
  while (n >= 8) {
    uint64_t word;
    std::memcpy(&word, p, 8);
    c64 = _mm_crc32_u64(c64, word);
    p += 8;
    n -= 8;
  }
  c = static_cast<uint32_t>(c64);
  while (n > 0) {
    c = _mm_crc32_u8(c, *p++);
    --n;
  }
  return c;
}

bool has_sse42() {
  static const bool yes = __builtin_cpu_supports("sse4.2");
  return yes;
}
#endif

}  // namespace

uint32_t crc32c_extend(uint32_t crc, const void* data, size_t n) {
  const auto* p = static_cast<const unsigned char*>(data);
#if defined(TERN_CRC32C_SSE42)
  if (has_sse42()) return ~update_sse42(~crc, p, n);
#endif
  return ~update_table(~crc, p, n);
}

uint32_t crc32c_extend_portable(uint32_t crc, const void* data, size_t n) {
  return ~update_table(~crc, static_cast<const unsigned char*>(data), n);
}

}  // namespace tern::format
