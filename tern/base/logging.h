// Logging to stderr and TERN_VERBOSE topics (TERN_VERBOSE=kernels,passes or TERN_VERBOSE=all).
#pragma once

#include <iostream>
#include <string_view>

#include "tern/base/error.h"

namespace tern {

// True when TERN_VERBOSE names `topic` (comma-separated list, or "all").
bool verbose_enabled(std::string_view topic);
// Overrides the environment (tests, the CLI's --verbose).
void set_verbose_topics(std::string_view topics);

void log_line(std::string_view level, const std::string& message);

template <typename... Args>
void log_info(const Args&... args) {
  log_line("I", str_cat(args...));
}
template <typename... Args>
void log_warning(const Args&... args) {
  log_line("W", str_cat(args...));
}
template <typename... Args>
void log_verbose(std::string_view topic, const Args&... args) {
  if (verbose_enabled(topic)) log_line(topic, str_cat(args...));
}

}  // namespace tern
