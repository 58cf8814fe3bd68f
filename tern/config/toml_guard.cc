// check_toml_text: a small scan of TOML's lexical structure (strings, comments, brackets) that
// finds what toml++ 3.3.0 cannot report.
#include "tern/config/toml_guard.h"

#include <cstdint>

#include "tern/base/error.h"
#include "tern/config/config.h"

namespace tern::config {
namespace {

bool bare_key_char(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '-';
}

}  // namespace

void check_toml_text(std::string_view t, const std::string& file) {
  const size_t n = t.size();
  int64_t line = 1;
  size_t line_start = 0;
  std::string open;         // the [ and { of the values being read, innermost last
  bool line_begins = true;  // only whitespace so far on this line
  bool in_header = false;   // on a table header's line
  auto fail = [&](size_t at, const std::string& what) {
    throw ConfigError(
        ErrorCode::kInvalidArgument,
        str_cat(file, ":", line, ":", at - line_start + 1, ": TOML syntax error: ", what));
  };
  for (size_t i = 0; i < n; ++i) {
    const char c = t[i];
    if (c == '\n') {
      ++line;
      line_start = i + 1;
      line_begins = true;
      in_header = false;
      continue;
    }
    if (c == ' ' || c == '\t' || c == '\r') continue;
    if (c == '#') {  // a comment: to the end of the line
      while (i + 1 < n && t[i + 1] != '\n') ++i;
      continue;
    }
    if (c == '"' || c == '\'') {
      const bool multi = i + 2 < n && t[i + 1] == c && t[i + 2] == c;
      size_t j = i + (multi ? 3 : 1);
      for (; j < n; ++j) {
        if (t[j] == '\\' && c == '"') {  // an escape in a basic string
          ++j;
          if (j < n && t[j] == '\n') ++line, line_start = j + 1;
          continue;
        }
        if (t[j] == '\n') {
          if (!multi) break;  // unterminated: toml++ reports it
          ++line;
          line_start = j + 1;
          continue;
        }
        if (t[j] == c && (!multi || (j + 2 < n && t[j + 1] == c && t[j + 2] == c))) {
          if (multi) {
            j += 2;
            while (j + 1 < n && t[j + 1] == c) ++j;  // up to two more quotes belong to the value
          }
          break;
        }
      }
      i = j < n && t[j] == '\n' ? j - 1 : j;
      line_begins = false;
      continue;
    }
    if (static_cast<unsigned char>(c) >= 0x80)  // TOML allows them in strings and comments only;
      // toml++ 3.3.0's whitespace test reaches __builtin_unreachable on most of them.
      fail(i, "a non-ASCII byte outside a string or a comment");
    if (c == '[' && open.empty() && line_begins) {  // a table header
      size_t j = i + 1;
      if (j < n && t[j] == '[') ++j;
      while (j < n && (t[j] == ' ' || t[j] == '\t')) ++j;
      if (j < n && !bare_key_char(t[j]) && t[j] != '"' && t[j] != '\'' && t[j] != ']')
        fail(j, str_cat("a table header must start with a key, saw '", std::string(1, t[j]), "'"));
      in_header = true;  // its brackets are no values; its quoted keys are strings as above
      line_begins = false;
      continue;
    }
    if (in_header) continue;
    if (c == '[' || c == '{') open += c;
    if (c == ']' && !open.empty()) open.pop_back();
    if (c == '}' && !open.empty()) {
      // toml++ 3.3.0 asserts on a '}' where an array element starts: any '}' in an array.
      if (open.back() == '[') fail(i, "'}' inside an array (no inline table is open)");
      open.pop_back();
    }
    line_begins = false;
  }
}

}  // namespace tern::config
