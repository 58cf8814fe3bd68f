// parse_toml: toml::parse behind a check of what Debian's toml++ 3.3 must not be given: a
// non-ASCII character outside strings and comments. Its whitespace test reaches
// __builtin_unreachable for some of them (U+00A1 after a value: "x = 1 ¡"), which is undefined
// behaviour, found by tern/pipeline/schema_fuzz.cc under UBSan. TOML 1.0 allows non-ASCII only in
// strings and comments, so such text is a syntax error anyway; it is reported as one, as the
// toml::parse_error toml++ throws for the others (callers' catch blocks stay as they are).
// Every reader of TOML text in tern parses through this (tern/config, tern/sweep,
// tern/pipeline).
#pragma once

#include <toml++/toml.h>
#include <string_view>

namespace tern::config {

// toml::parse(text, source), or toml::parse_error naming line and column.
toml::table parse_toml(std::string_view text, std::string_view source);

}  // namespace tern::config
