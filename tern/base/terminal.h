// The terminal a stream writes to, for output drawn in place (progress bars and lines): whether a
// file descriptor is an interactive terminal, and how many columns it has now (asked on every
// call, so a resized window is followed).
#pragma once

#include <string>

namespace tern {

// True if `fd` is a terminal and TERM is not "dumb".
bool is_interactive_terminal(int fd);

// The width of the terminal on `fd` (TIOCGWINSZ); else the COLUMNS environment variable; else 80.
int terminal_columns(int fd);

// `line` cut to at most `width` characters (bytes: progress text is ASCII).
std::string cut_to_width(const std::string& line, size_t width);

}  // namespace tern
