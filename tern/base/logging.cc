// Logging and TERN_VERBOSE topic parsing.
#include "tern/base/logging.h"

#include <cstdlib>
#include <mutex>
#include <string>

namespace tern {
namespace {

std::mutex g_mu;
std::string g_topics;
bool g_loaded = false;

const std::string& topics() {
  if (!g_loaded) {
    const char* env = std::getenv("TERN_VERBOSE");
    g_topics = env ? env : "";
    g_loaded = true;
  }
  return g_topics;
}

}  // namespace

bool verbose_enabled(std::string_view topic) {
  std::lock_guard<std::mutex> lock(g_mu);
  const std::string& t = topics();
  if (t.empty()) return false;
  if (t == "all" || t == "1") return true;
  size_t start = 0;
  while (start <= t.size()) {
    size_t end = t.find(',', start);
    if (end == std::string::npos) end = t.size();
    if (std::string_view(t).substr(start, end - start) == topic) return true;
    start = end + 1;
  }
  return false;
}

void set_verbose_topics(std::string_view value) {
  std::lock_guard<std::mutex> lock(g_mu);
  g_topics = value;
  g_loaded = true;
}

void log_line(std::string_view level, const std::string& message) {
  std::lock_guard<std::mutex> lock(g_mu);
  std::cerr << "[tern " << level << "] " << message << "\n";
}

}  // namespace tern
