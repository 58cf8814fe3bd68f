// split_lines, and printable: what a terminal must not receive raw is escaped, text is kept.
#include "tern/base/strings.h"

#include <gtest/gtest.h>

namespace tern {
namespace {

TEST(Strings, SplitLines) {
  EXPECT_EQ(split_lines("a\nb\n"), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(split_lines("a\n\nb"), (std::vector<std::string>{"a", "", "b"}));
}

TEST(Strings, PrintableEscapesControlsAndKeepsText) {
  EXPECT_EQ(printable("loss"), "loss");
  EXPECT_EQ(printable("\x1b[2Jclear"), "\\x1b[2Jclear");
  EXPECT_EQ(printable(std::string("nul\0byte", 8)), "nul\\x00byte");
  EXPECT_EQ(printable("line\nfake line\r\t"), "line\\nfake line\\r\\t");
  EXPECT_EQ(printable("a\\b\x7f"), "a\\\\b\\x7f");
  EXPECT_EQ(printable("\xc2\x9b"
                      "31m"),
            "\\xc2\\x9b31m");  // U+009B, the C1 CSI
  EXPECT_EQ(printable("d\xc3\xa9j\xc3\xa0 \xe2\x9c\x93"), "d\xc3\xa9j\xc3\xa0 \xe2\x9c\x93");
}

}  // namespace
}  // namespace tern
