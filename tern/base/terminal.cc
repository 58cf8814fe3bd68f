// Terminal queries: isatty, TIOCGWINSZ.
#include "tern/base/terminal.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

namespace tern {

bool is_interactive_terminal(int fd) {
  const char* term = std::getenv("TERM");
  return isatty(fd) && !(term && std::strcmp(term, "dumb") == 0);
}

int terminal_columns(int fd) {
  winsize ws{};
  if (ioctl(fd, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) return ws.ws_col;
  if (const char* env = std::getenv("COLUMNS")) {
    const int n = std::atoi(env);
    if (n > 0) return n;
  }
  return 80;
}

std::string cut_to_width(const std::string& line, size_t width) {
  return line.size() <= width ? line : line.substr(0, width);
}

}  // namespace tern
