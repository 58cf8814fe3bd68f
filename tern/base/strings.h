// Small string helpers shared across modules.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace tern {

// The lines of `text` without their '\n' (a trailing newline adds no empty line).
std::vector<std::string> split_lines(std::string_view text);

// `text` safe to print on a terminal: C0 controls (ESC, newlines, NUL, ...), DEL and the UTF-8
// encodings of the C1 controls (U+0080..U+009F, e.g. CSI) as \xHH escapes (\n, \t and \r as
// such), a backslash doubled; everything else (UTF-8 text included) unchanged. For bytes that come
// from files someone else wrote: event-file tags and texts printed raw could clear the screen or
// fake output lines (bad-input report F20).
std::string printable(std::string_view text);

}  // namespace tern
