// parse_toml: toml::parse behind tern/base's toml_text_problem (toml_precheck.h), the one check
// of what Debian's toml++ 3.3 must not be given: it aborts on some malformed headers and arrays
// (an internal assertion) and reaches __builtin_unreachable on a non-ASCII character outside
// strings and comments ("x = 1 ¡", undefined behaviour, found by tern/pipeline/schema_fuzz.cc
// under UBSan). Such text is a TOML syntax error anyway; it is reported as the toml::parse_error
// toml++ throws for the others (callers' catch blocks stay as they are). Every reader of TOML text
// in tern/config, tern/sweep and tern/pipeline parses through this; tern/transform (below config)
// calls toml_text_problem itself.
#pragma once

#include <toml++/toml.h>
#include <string_view>

namespace tern::config {

// toml::parse(text, source), or toml::parse_error naming line and column.
toml::table parse_toml(std::string_view text, std::string_view source);

}  // namespace tern::config
