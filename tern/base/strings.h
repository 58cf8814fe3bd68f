// Small string helpers shared across modules.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace tern {

// The lines of `text` without their '\n' (a trailing newline adds no empty line).
std::vector<std::string> split_lines(std::string_view text);

}  // namespace tern
