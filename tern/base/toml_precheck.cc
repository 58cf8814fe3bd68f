// toml_text_problem: one pass over the text with a stack of open arrays / inline tables.
#include "tern/base/toml_precheck.h"

#include <algorithm>
#include <cctype>
#include <vector>

#include "tern/base/error.h"

namespace tern {
namespace {

// toml++ 3.3 reaches __builtin_unreachable classifying such a byte (undefined behaviour).
constexpr const char* kNonAscii =
    "a non-ASCII character outside a string or comment (TOML allows it only in those)";

bool bare_key_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-';
}

TomlTextProblem problem_at(std::string_view text, size_t at, std::string what) {
  TomlTextProblem p{1, 1, std::move(what)};
  int column = 1;  // in characters, as toml++ counts them (UTF-8 continuation bytes skipped)
  for (size_t i = 0; i < at && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++p.line;
      column = 1;
    } else if ((static_cast<unsigned char>(text[i]) & 0xc0) != 0x80) {
      ++column;
    }
  }
  p.column = column;
  return p;
}

// The end of the string starting at `i` (a quote), past its closing quote(s); text.size() when it
// is not closed (toml++ reports that).
size_t skip_string(std::string_view text, size_t i) {
  const char q = text[i];
  const bool multi = text.substr(i, 3) == std::string(3, q);
  size_t k = i + (multi ? 3 : 1);
  while (k < text.size()) {
    if (q == '"' && text[k] == '\\') {
      k += 2;
      continue;
    }
    if (!multi && text[k] == '\n') return k;  // unterminated
    if (text[k] == q) {
      if (!multi) return k + 1;
      if (text.substr(k, 3) == std::string(3, q)) {
        k += 3;
        // A closing run may hold up to two more quotes that belong to the string.
        for (int extra = 0; extra < 2 && k < text.size() && text[k] == q; ++extra) ++k;
        return k;
      }
    }
    ++k;
  }
  return text.size();
}

}  // namespace

std::optional<TomlTextProblem> toml_text_problem(std::string_view text) {
  for (size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if ((c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0x7f) {
      const char* hex = "0123456789abcdef";
      return problem_at(
          text, i, str_cat("control character 0x", hex[c >> 4], hex[c & 15], " is not allowed"));
    }
  }
  std::vector<char> open;  // '[' arrays and '{' inline tables of the value being read
  bool line_start = true;
  bool expect_value = false;  // right after an array's '[' or ','
  for (size_t i = 0; i < text.size();) {
    const char c = text[i];
    if (c == '\n') {
      line_start = true;
      ++i;
      continue;
    }
    if (c == ' ' || c == '\t' || c == '\r') {
      ++i;
      continue;
    }
    if (c == '#') {
      while (i < text.size() && text[i] != '\n') ++i;
      continue;
    }
    if (line_start && open.empty() && c == '[') {  // a table header
      size_t k = i + 1;
      if (k < text.size() && text[k] == '[') ++k;
      while (k < text.size() && (text[k] == ' ' || text[k] == '\t')) ++k;
      if (k >= text.size() || !(bare_key_char(text[k]) || text[k] == '"' || text[k] == '\''))
        return problem_at(text, k, "a table header needs a key (bare, or quoted)");
      // The rest is toml++'s to check, but for bytes above ASCII outside its quoted keys.
      while (i < text.size() && text[i] != '\n' && text[i] != '#') {
        if (text[i] == '"' || text[i] == '\'') {
          i = skip_string(text, i);
        } else if (static_cast<unsigned char>(text[i]) >= 0x80) {
          return problem_at(text, i, kNonAscii);
        } else {
          ++i;
        }
      }
      continue;
    }
    if (static_cast<unsigned char>(c) >= 0x80) return problem_at(text, i, kNonAscii);
    line_start = false;
    if (expect_value && c == '}') return problem_at(text, i, "an array expects a value, saw '}'");
    expect_value = false;
    if (c == '"' || c == '\'') {
      i = skip_string(text, i);
      continue;
    }
    if (c == '[' || c == '{') {
      open.push_back(c);
      expect_value = c == '[';
    } else if (c == ']' || c == '}') {
      if (!open.empty()) open.pop_back();
    } else if (c == ',' && !open.empty() && open.back() == '[') {
      expect_value = true;
    }
    ++i;
  }
  return std::nullopt;
}

}  // namespace tern
