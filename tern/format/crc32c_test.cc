// CRC32C: the check value and RFC 3720 vectors, extension across every split point, the TFRecord
// mask (docs/formats.md values), and the instruction and table paths against a bit-at-a-time
// reference.
#include "tern/format/crc32c.h"

#include <gtest/gtest.h>

#include <string>

#include "tern/base/philox.h"

namespace tern::format {
namespace {

// The definition: reflected polynomial, one bit per step.
uint32_t crc32c_reference(std::string_view s) {
  uint32_t c = 0xffffffffu;
  for (unsigned char byte : s) {
    c ^= byte;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
  }
  return ~c;
}

TEST(Crc32c, CheckValueAndRfc3720Vectors) {
  EXPECT_EQ(crc32c("123456789"), 0xE3069283u);
  EXPECT_EQ(crc32c(""), 0u);
  EXPECT_EQ(crc32c(std::string(32, '\0')), 0x8A9136AAu);
  EXPECT_EQ(crc32c(std::string(32, '\xff')), 0x62A8AB43u);
  std::string ascending;
  for (int i = 0; i < 32; ++i) ascending += static_cast<char>(i);
  EXPECT_EQ(crc32c(ascending), 0x46DD794Eu);
}

TEST(Crc32c, ExtendingEqualsOneCall) {
  const std::string s = "123456789";
  for (size_t cut = 0; cut <= s.size(); ++cut) {
    EXPECT_EQ(crc32c_extend(crc32c(s.substr(0, cut)), s.data() + cut, s.size() - cut), 0xE3069283u)
        << cut;
  }
}

TEST(Crc32c, MatchesTheBitwiseReferenceAtEveryLengthAndAlignment) {
  PhiloxStream rng(7);
  std::string bytes(300, '\0');
  for (char& c : bytes) c = static_cast<char>(rng.next_below(256));
  for (size_t start = 0; start < 9; ++start) {
    for (size_t n = 0; start + n <= 120; ++n) {
      const std::string_view s = std::string_view(bytes).substr(start, n);
      ASSERT_EQ(crc32c(s), crc32c_reference(s)) << "start " << start << " length " << n;
      ASSERT_EQ(crc32c_extend_portable(0, s.data(), s.size()), crc32c_reference(s))
          << "table, start " << start << " length " << n;
    }
  }
  EXPECT_EQ(crc32c(bytes), crc32c_reference(bytes));
}

TEST(Crc32c, MaskMatchesTfRecordAndInverts) {
  EXPECT_EQ(crc32c_mask(crc32c(std::string(8, '\0'))), 0x07980329u);
  EXPECT_EQ(crc32c_mask(0), 0xA282EAD8u);
  // rotate right by 15 then add: 0x00008000 -> 0x00000001 + delta.
  EXPECT_EQ(crc32c_mask(0x00008000u), 0xA282EAD9u);
  for (uint32_t v : {0u, 1u, 0x8000u, 0xdeadbeefu, 0xffffffffu}) {
    EXPECT_EQ(crc32c_unmask(crc32c_mask(v)), v);
    EXPECT_EQ(crc32c_mask(crc32c_unmask(v)), v);
  }
}

}  // namespace
}  // namespace tern::format
