// fingerprint64 (FNV-1a 64) against the published test vectors, and mix64 against splitmix64's
// first outputs.
#include "tern/base/fingerprint.h"

#include <gtest/gtest.h>

namespace tern {
namespace {

TEST(Fingerprint, Fnv1a64Vectors) {
  EXPECT_EQ(fingerprint64(""), 0xcbf29ce484222325ull);
  EXPECT_EQ(fingerprint64("a"), 0xaf63dc4c8601ec8cull);
  EXPECT_EQ(fingerprint64("foobar"), 0x85944171f73967e8ull);
  // Bytes, not characters: a NUL and a byte above 0x7f count.
  EXPECT_NE(fingerprint64(std::string_view("a\0", 2)), fingerprint64("a"));
  EXPECT_EQ(fingerprint64_i64("a"), static_cast<int64_t>(0xaf63dc4c8601ec8cull));
  static_assert(fingerprint64("a") == 0xaf63dc4c8601ec8cull);
}

TEST(Fingerprint, Mix64IsSplitmix64) {
  // splitmix64 seeded with 0 yields mix64(0), then mix64(0x9e3779b97f4a7c15), ...
  EXPECT_EQ(mix64(0), 0xe220a8397b1dcdafull);
  EXPECT_EQ(mix64(1), 0x910a2dec89025cc1ull);
}

}  // namespace
}  // namespace tern
