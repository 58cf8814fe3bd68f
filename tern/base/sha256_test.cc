// SHA-256 against the FIPS 180-4 example vectors.
#include "tern/base/sha256.h"

#include <gtest/gtest.h>

#include "tern/base/error.h"

namespace tern {
namespace {

TEST(Sha256, KnownVectors) {
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  Sha256 h;  // a million 'a', fed in odd-sized pieces
  std::string chunk(997, 'a');
  size_t left = 1000000;
  while (left > 0) {
    size_t n = std::min(left, chunk.size());
    h.update(chunk.data(), n);
    left -= n;
  }
  EXPECT_EQ(h.hex_digest(), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(Sha256, MovedHashContinues) {
  Sha256 a;
  a.update("ab");
  Sha256 b = std::move(a);
  b.update("c");
  EXPECT_EQ(b.hex_digest(), sha256_hex("abc"));
  Sha256 c;
  c = std::move(b);
  EXPECT_THROW(c.update("x"), Error);  // finished: digest() was called
}

}  // namespace
}  // namespace tern
