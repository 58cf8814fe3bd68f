// Philox4x32-10 against the published known-answer vectors of Random123 (D. E. Shaw Research):
// the "philox4x32 10" lines of Random123's kat_vectors file (tests/kat_vectors in the Random123
// distribution; the same lines, with more keys, are in examples/kat_vectors of the Random123
// manual, github.com/girving/random123-manual at 61e8479). Columns there: counter (4 words),
// key (2 words), expected output (4 words), all hex. docs/formats.md, "Philox4x32-10", restates
// the mapping onto tern's Philox(seed)(counter_lo, counter_hi).
#include "tern/base/philox.h"

#include <gtest/gtest.h>

#include <set>

namespace tern {
namespace {

struct Kat {
  uint32_t ctr[4];
  uint32_t key[2];
  uint32_t out[4];
};

constexpr Kat kKats[] = {
    // Random123 tests/kat_vectors: zeros, ones, digits of pi.
    {{0x00000000, 0x00000000, 0x00000000, 0x00000000},
     {0x00000000, 0x00000000},
     {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
    {{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff},
     {0xffffffff, 0xffffffff},
     {0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
    {{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344},
     {0xa4093822, 0x299f31d0},
     {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
    // random123-manual examples/kat_vectors: one bit set in each counter word, keys (1, 0) and
    // (0, 0x80000000).
    {{0x00000001, 0x00000000, 0x00000000, 0x00000000},
     {0x00000001, 0x00000000},
     {0xac08141b, 0xdfc5ccbe, 0x79c07a47, 0xa7f66093}},
    {{0x00000000, 0x00000000, 0x00000000, 0x00000001},
     {0x00000001, 0x00000000},
     {0x127bee41, 0x1e047488, 0x48842b20, 0x0a393496}},
    {{0x00000000, 0x00000000, 0x80000000, 0x00000000},
     {0x00000000, 0x80000000},
     {0xae56ca02, 0x7609ba67, 0x25abd7df, 0x46ce39a3}},
    {{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344},
     {0x00000000, 0xffffffff},
     {0x08f7720c, 0x845ee9e0, 0x502ccd3d, 0xa9a00e27}},
};

uint64_t join(uint32_t lo, uint32_t hi) {
  return static_cast<uint64_t>(hi) << 32 | lo;
}

TEST(Philox, Random123KnownAnswers) {
  for (const Kat& k : kKats) {
    const Philox rng(join(k.key[0], k.key[1]));
    const Philox::Block got = rng(join(k.ctr[0], k.ctr[1]), join(k.ctr[2], k.ctr[3]));
    for (int i = 0; i < 4; ++i) {
      EXPECT_EQ(got[static_cast<size_t>(i)], k.out[i])
          << "word " << i << " of the vector with counter " << std::hex << k.ctr[0] << " "
          << k.ctr[1] << " " << k.ctr[2] << " " << k.ctr[3] << ", key " << k.key[0] << " "
          << k.key[1];
    }
  }
}

TEST(Philox, StreamSeeksToAnyPosition) {
  PhiloxStream a(42, 7);
  std::vector<uint32_t> words;
  for (int i = 0; i < 11; ++i) words.push_back(a.next_u32());
  EXPECT_EQ(a.position(), 11u);
  for (uint64_t p = 0; p < 11; ++p) {
    PhiloxStream b(42, 7);
    b.seek(p);
    EXPECT_EQ(b.next_u32(), words[p]) << "position " << p;
  }
  // The stream's words are the blocks of Philox(seed) at (counter, stream) in order.
  const Philox::Block first = Philox(42)(0, 7);
  EXPECT_EQ(words[0], first[0]);
  EXPECT_EQ(words[3], first[3]);
}

TEST(Philox, NextBelowStaysInRange) {
  PhiloxStream s(1);
  std::set<uint64_t> seen;
  for (int i = 0; i < 200; ++i) {
    const uint64_t v = s.next_below(5);
    ASSERT_LT(v, 5u);
    seen.insert(v);
  }
  EXPECT_EQ(seen.size(), 5u);
}

}  // namespace
}  // namespace tern
