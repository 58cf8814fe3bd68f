// TOML text that Debian's toml++ (3.3) cannot be handed: on some malformed input its parser trips
// an internal assertion and aborts the process instead of throwing a parse_error. Callers that
// parse TOML from outside (tern/transform's spec reader) run this first and report the problem as
// the syntax error it is. It finds (and only these; valid TOML always passes):
//   - control characters other than tab, LF and CR (TOML allows none anywhere, comments included);
//   - a table header whose key does not start with a bare-key character or a quote (`[&`, `[[=`;
//     toml++ asserts in parse_key, fixed upstream in marzer/tomlplusplus#301);
//   - a '}' where an array expects a value (`[1, }]`: toml++ asserts in parse_value);
//   - a byte above ASCII outside strings and comments (`x = 1 \xc2\xa1`: toml++ reaches
//     __builtin_unreachable classifying it).
// To know what is a header and what is a value it follows strings (basic, literal, multi-line),
// comments, arrays and inline tables.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace tern {

struct TomlTextProblem {
  int line = 0, column = 0;  // 1-based
  std::string what;
};

std::optional<TomlTextProblem> toml_text_problem(std::string_view text);

}  // namespace tern
