// A check of TOML text before toml++ parses it. Debian's toml++ 3.3.0 asserts (an abort; with
// NDEBUG an unchecked assumption: undefined behaviour) on a table header whose first character is
// not a key character ("[)model]", "[[ =x]]") and on a '}' where an array element starts
// ("paths = [}"), and its test for Unicode whitespace runs into __builtin_unreachable on most
// non-ASCII characters outside strings (UBSan); its parser error paths never see them (found by
// the pipeline file's fuzz target). Every
// reader of TOML files that users hand to tern calls this first (load_config, render_config,
// tern/pipeline's pipeline file and pinned schema), so such a file is an ordinary syntax error.
#pragma once

#include <string>
#include <string_view>

namespace tern::config {

// ConfigError "FILE:LINE:COLUMN: TOML syntax error: ..." for a table header ([a] or [[a]], at the
// top level: not inside a string, a comment or a multi-line array) whose key does not start with
// a bare-key character (A-Z a-z 0-9 _ -), a quote or "]", for a '}' inside an array, and for a
// non-ASCII byte outside strings and comments (TOML allows none there).
// Everything else is left to toml++.
void check_toml_text(std::string_view text, const std::string& file);

}  // namespace tern::config
