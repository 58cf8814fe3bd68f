// parse_toml (toml_text.h): a small scan of strings and comments, then toml::parse.
#include "tern/config/toml_text.h"

#include <memory>
#include <string>

namespace tern::config {

namespace {

// Where the first non-ASCII byte outside strings and comments is (0-based offset), or npos.
size_t non_ascii_outside_strings(std::string_view t) {
  size_t i = 0;
  auto starts = [&](size_t at, std::string_view s) { return t.substr(at, s.size()) == s; };
  while (i < t.size()) {
    const char c = t[i];
    if (c == '#') {
      while (i < t.size() && t[i] != '\n') ++i;
    } else if (starts(i, "\"\"\"") || starts(i, "'''")) {
      const std::string_view close = t.substr(i, 3);
      const bool basic = close[0] == '"';
      i += 3;
      while (i < t.size() && !starts(i, close)) i += basic && t[i] == '\\' ? 2 : 1;
      i += 3;
      while (i < t.size() && t[i] == close[0]) ++i;  // """a"""" ends with quotes of its own
    } else if (c == '"' || c == '\'') {
      ++i;
      while (i < t.size() && t[i] != c && t[i] != '\n') i += c == '"' && t[i] == '\\' ? 2 : 1;
      ++i;
    } else if (static_cast<unsigned char>(c) >= 0x80) {
      return i;
    } else {
      ++i;
    }
  }
  return std::string_view::npos;
}

}  // namespace

toml::table parse_toml(std::string_view text, std::string_view source) {
  const size_t at = non_ascii_outside_strings(text);
  if (at != std::string_view::npos) {
    toml::source_position pos{1, 1};
    for (size_t k = 0; k < at; ++k) {
      if (text[k] == '\n') {
        ++pos.line;
        pos.column = 1;
      } else if ((static_cast<unsigned char>(text[k]) & 0xc0) != 0x80) {
        ++pos.column;  // columns count characters, as toml++'s do
      }
    }
    throw toml::parse_error(
        "a non-ASCII character outside a string or comment (TOML allows it only in those)", pos,
        std::make_shared<const std::string>(source));
  }
  return toml::parse(text, source);
}

}  // namespace tern::config
