// TOML text of values for schema_to_toml (schema.cc) and its tests: basic strings with every
// control character escaped, numbers that read back as the same double (integers for int
// features). Internal to tern/pipeline.
#pragma once

#include <string>
#include <string_view>

namespace tern::pipeline::schema_internal {

std::string toml_string(std::string_view s);
// Shortest round-trip text; "2.0" rather than "2" for a float; an integer when `integer` and v
// is one.
std::string toml_number(double v, bool integer);

}  // namespace tern::pipeline::schema_internal
