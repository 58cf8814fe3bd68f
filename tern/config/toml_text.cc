// parse_toml (toml_text.h): tern/base's check of what toml++ 3.3 cannot be handed
// (toml_precheck.h: control characters, headers without a key, '}' for an array value, non-ASCII
// outside strings and comments), reported as toml++'s own parse_error; then toml::parse.
#include "tern/config/toml_text.h"

#include <memory>
#include <string>

#include "tern/base/toml_precheck.h"

namespace tern::config {

toml::table parse_toml(std::string_view text, std::string_view source) {
  if (std::optional<TomlTextProblem> p = toml_text_problem(text)) {
    throw toml::parse_error(p->what.c_str(),
                            toml::source_position{static_cast<toml::source_index>(p->line),
                                                  static_cast<toml::source_index>(p->column)},
                            std::make_shared<const std::string>(source));
  }
  return toml::parse(text, source);
}

}  // namespace tern::config
