// check_toml_text: table headers toml++ 3.3.0 would abort on are syntax errors naming file:line;
// brackets inside strings, comments and multi-line arrays are left alone.
#include "tern/config/toml_guard.h"

#include <gtest/gtest.h>

#include "tern/config/config.h"

namespace tern::config {
namespace {

std::string error_of(const std::string& text) {
  try {
    check_toml_text(text, "f.toml");
  } catch (const ConfigError& e) {
    return e.message();
  }
  return "";
}

TEST(TomlGuard, HeadersThatToml3AbortsOnAreSyntaxErrors) {
  EXPECT_EQ(error_of("[)model]\n"),
            "f.toml:1:2: TOML syntax error: a table header must start with a key, saw ')'");
  EXPECT_NE(error_of("a = 1\n  [[ =x]]\n").find("f.toml:2:6:"), std::string::npos);
  EXPECT_NE(error_of("a = [\n 1,\n]\n[{x]\n").find("f.toml:4:2:"), std::string::npos);
  EXPECT_EQ(error_of("paths = [}a\"]\n"),
            "f.toml:1:10: TOML syntax error: '}' inside an array (no inline table is open)");
  EXPECT_NE(error_of("a = [{x = 1}, [2, }]]\n").find("f.toml:1:19:"), std::string::npos);
  EXPECT_EQ(error_of("a = 1\n\xc3\xa9 = 2\n"),
            "f.toml:2:1: TOML syntax error: a non-ASCII byte outside a string or a comment");
}

TEST(TomlGuard, ValidTomlPasses) {
  for (const char* ok : {
           "[model]\nname = \"cnn\"\n[[data.transforms]]\nop = \"map\"\n",
           "[ \"quoted key\" ]\n['lit']\n[a.b-c_d]\n[]\n",  // [] is toml++'s own error
           "values = [\n  [1, 2],\n  [{x = 1}],\n  \"[)\",\n]\n",
           "t = {a = [1, {b = 2}], c = \"}\"}\n",
           "s = \"\"\"\n[)not a header\n\"\"\"\nt = '''\n[(\n'''\n",
           "# [)comment\nk = 'a[b' # [)\n",
           "name = \"caf\xc3\xa9\" # d\xc3\xa9j\xc3\xa0\n'\xe2\x82\xac' = '''\n\xc3\xa9\n'''\n",
           "e = \"\\\"[)\"\n",
       })
    EXPECT_EQ(error_of(ok), "") << ok;
}

}  // namespace
}  // namespace tern::config
