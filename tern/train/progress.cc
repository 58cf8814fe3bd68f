// Progress bar drawing.
#include "tern/train/progress.h"

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>

namespace tern::train {

ProgressBar::ProgressBar(std::ostream& os, bool interactive, int epoch, int epochs,
                         int64_t total_steps)
    : os_(os),
      interactive_(interactive),
      epoch_(epoch),
      epochs_(epochs),
      total_(total_steps),
      start_(std::chrono::steady_clock::now()),
      last_draw_(start_) {
  if (interactive_) os_ << "Epoch " << epoch_ + 1 << "/" << epochs_ << "\n" << std::flush;
}

bool ProgressBar::stdout_is_terminal() {
  const char* term = std::getenv("TERM");
  return isatty(STDOUT_FILENO) && !(term && std::strcmp(term, "dumb") == 0);
}

std::string ProgressBar::format_logs(const OrderedLogs& logs) {
  std::ostringstream os;
  for (const auto& [name, v] : logs) {
    char buf[64];
    if (std::fabs(v) >= 1e-3 || v == 0) {
      std::snprintf(buf, sizeof(buf), "%.4f", v);
    } else {
      std::snprintf(buf, sizeof(buf), "%.4e", v);
    }
    os << " - " << name << ": " << buf;
  }
  return os.str();
}

std::string ProgressBar::format_duration(double s) {
  char buf[32];
  if (s >= 3600) {
    std::snprintf(buf, sizeof(buf), "%d:%02d:%02d", static_cast<int>(s / 3600),
                  static_cast<int>(s / 60) % 60, static_cast<int>(s) % 60);
  } else if (s >= 60) {
    std::snprintf(buf, sizeof(buf), "%d:%02d", static_cast<int>(s / 60), static_cast<int>(s) % 60);
  } else {
    std::snprintf(buf, sizeof(buf), "%.0fs", s);
  }
  return buf;
}

void ProgressBar::update(int64_t step, const OrderedLogs& logs) {
  if (!interactive_) return;
  auto now = std::chrono::steady_clock::now();
  bool last = total_ > 0 && step >= total_;
  if (!last && std::chrono::duration<double>(now - last_draw_).count() < 0.1) return;
  last_draw_ = now;
  double elapsed = std::chrono::duration<double>(now - start_).count();
  std::ostringstream line;
  if (total_ > 0) {
    int width = 30;
    int filled = static_cast<int>(width * static_cast<double>(step) / static_cast<double>(total_));
    std::string bar(static_cast<size_t>(std::max(filled - 1, 0)), '=');
    if (filled > 0) bar += step >= total_ ? "=" : ">";
    bar.resize(static_cast<size_t>(width), '.');
    int digits = static_cast<int>(std::to_string(total_).size());
    char counter[64];
    std::snprintf(counter, sizeof(counter), "%*lld/%lld", digits, static_cast<long long>(step),
                  static_cast<long long>(total_));
    double eta =
        step > 0 ? elapsed / static_cast<double>(step) * static_cast<double>(total_ - step) : 0;
    line << counter << " [" << bar << "] - ETA: " << format_duration(eta);
  } else {
    line << step << "/Unknown - " << format_duration(elapsed);
  }
  line << format_logs(logs);
  os_ << "\r" << line.str() << "\033[K" << std::flush;
}

void ProgressBar::finish(int64_t steps, int64_t samples, const OrderedLogs& logs) {
  double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  double per_step_ms = steps > 0 ? elapsed * 1000 / static_cast<double>(steps) : 0;
  double sps = elapsed > 0 ? static_cast<double>(samples) / elapsed : 0;
  char timing[128];
  std::snprintf(timing, sizeof(timing), "%s %.0fms/step - %.0f samples/s",
                format_duration(elapsed).c_str(), per_step_ms, sps);
  if (interactive_) {
    os_ << "\r" << steps << "/" << steps << " [" << std::string(30, '=') << "] - " << timing
        << format_logs(logs) << "\033[K\n"
        << std::flush;
  } else {
    os_ << "Epoch " << epoch_ + 1 << "/" << epochs_ << " - " << steps << " steps - " << timing
        << format_logs(logs) << "\n"
        << std::flush;
  }
}

}  // namespace tern::train
