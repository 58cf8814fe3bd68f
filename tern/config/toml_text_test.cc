// parse_toml: non-ASCII text outside strings and comments is a syntax error with its line and
// column (toml++ 3.3 reached __builtin_unreachable on some of it), and everywhere else passes.
#include "tern/config/toml_text.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "tern/config/config.h"

namespace tern::config {
namespace {

TEST(ParseToml, NonAsciiOutsideStringsIsASyntaxErrorWithItsPosition) {
  try {
    parse_toml("a = 1\nx = 1 \u00A1\n", "f.toml");
    FAIL() << "accepted";
  } catch (const toml::parse_error& e) {
    EXPECT_EQ(e.source().begin.line, 2u);
    EXPECT_EQ(e.source().begin.column, 7u);
    EXPECT_EQ(*e.source().path, "f.toml");
  }
  EXPECT_THROW(parse_toml("\u00A1 = 1\n", "f.toml"), toml::parse_error);
  EXPECT_THROW(parse_toml("x = [1, \u3001]\n", "f.toml"), toml::parse_error);
}

TEST(ParseToml, NonAsciiInStringsAndCommentsParses) {
  const toml::table t = parse_toml(
      "# caf\u00e9 \u00A1\n\"k\u00e9y\" = \"\u00A1\\\"\u00e9\"\nl = '\u00A1'\n"
      "m = \"\"\"\n\u00A1 \"\" \u00e9\"\"\"\nn = '''\u00A1'''  # \u00A1\n",
      "f.toml");
  EXPECT_EQ(t["k\u00e9y"].value<std::string>(), "\u00A1\"\u00e9");
  EXPECT_EQ(t["l"].value<std::string>(), "\u00A1");
  EXPECT_EQ(t["m"].value<std::string>(), "\u00A1 \"\" \u00e9");
  EXPECT_EQ(t["n"].value<std::string>(), "\u00A1");
}

TEST(ParseToml, LoadConfigNamesTheLine) {
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("tern_toml_text_" + std::to_string(getpid()) + ".toml"))
                               .string();
  std::ofstream(path) << "[model]\nname = \"mlp\" \u00A1\n";
  try {
    load_config(path);
    FAIL() << "accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(e.message().find(path + ":2:14: TOML syntax error: a non-ASCII character"),
              std::string::npos)
        << e.what();
  }
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace tern::config
