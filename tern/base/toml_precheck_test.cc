// toml_text_problem: the inputs Debian's toml++ 3.3 aborts on are found with their line:column,
// and valid TOML with brackets, braces and quotes in strings, comments and multi-line arrays
// passes.
#include "tern/base/toml_precheck.h"

#include <gtest/gtest.h>

namespace tern {
namespace {

std::string problem(std::string_view text) {
  auto p = toml_text_problem(text);
  return p ? std::to_string(p->line) + ":" + std::to_string(p->column) + " " + p->what : "";
}

TEST(TomlPrecheck, FindsWhatTomlPlusPlusAbortsOn) {
  EXPECT_EQ(problem("[&"), "1:2 a table header needs a key (bare, or quoted)");
  EXPECT_EQ(problem("a = 1\n  [[ ="), "2:6 a table header needs a key (bare, or quoted)");
  EXPECT_EQ(problem("[[[1]]]"), "1:3 a table header needs a key (bare, or quoted)");
  EXPECT_EQ(problem("a = [1,}]"), "1:8 an array expects a value, saw '}'");
  EXPECT_EQ(problem("a = [\n  1, # c\n}]"), "3:1 an array expects a value, saw '}'");
  EXPECT_EQ(problem("a = {b = [}]}"), "1:11 an array expects a value, saw '}'");
  EXPECT_EQ(problem("a = \"x\x01\""), "1:7 control character 0x01 is not allowed");
  EXPECT_EQ(problem("# \x7f"), "1:3 control character 0x7f is not allowed");
  EXPECT_EQ(problem("x = 1 \xc2\xa1"),
            "1:7 a non-ASCII character outside a string or comment (TOML allows it only in those)");
  EXPECT_EQ(problem("[a\xc3\xbc]"),
            "1:3 a non-ASCII character outside a string or comment (TOML allows it only in those)");
  EXPECT_EQ(problem("[\"\xc3\xbc\"]\nx = \"\xc3\xbc\" # \xc3\xbc"), "");
}

TEST(TomlPrecheck, ValidTomlPasses) {
  EXPECT_EQ(problem(R"([a]
x = [
  [],
  [{b = 1}],   # [& in a comment
  [+1, -2],
  "[&",
  '}',
]
s = """
[& not a header "" ]
}"""
t = '''
[[=
'''
u = "\"[&"
[ "quoted key" ]
[[ arr ]]
v = {w = [1, 2], x = "}"}
)"),
            "");
  EXPECT_EQ(problem(""), "");
  EXPECT_EQ(problem("a = [1, 2,\n]"), "");
}

}  // namespace
}  // namespace tern
