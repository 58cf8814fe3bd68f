// Progress bar drawing, fitted to the terminal's width.
#include "tern/train/progress.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "tern/base/progress_line.h"
#include "tern/base/terminal.h"

namespace tern::train {
namespace {

constexpr int kBarWidth = 30, kMinBarWidth = 10;

std::string bar_text(int64_t step, int64_t total, int width) {
  const int filled =
      static_cast<int>(width * static_cast<double>(step) / static_cast<double>(total));
  std::string bar(static_cast<size_t>(std::max(filled - 1, 0)), '=');
  if (filled > 0) bar += step >= total ? "=" : ">";
  bar.resize(static_cast<size_t>(width), '.');
  return "[" + bar + "]";
}

// `parts` joined by " - ", broken into lines of at most `width` characters (continuations
// indented by 4); a part longer than a line is cut.
std::string break_lines(const std::vector<std::string>& parts, size_t width) {
  std::string out, line;
  for (const std::string& p : parts) {
    const std::string joined = line.empty() ? p : line + " - " + p;
    if (joined.size() <= width || line.empty()) {
      line = joined;
      continue;
    }
    out += cut_to_width(line, width) + "\033[K\n";
    line = "    " + p;
  }
  return out + cut_to_width(line, width) + "\033[K\n";
}

}  // namespace

ProgressBar::ProgressBar(std::ostream& os, bool interactive, int epoch, int epochs,
                         int64_t total_steps, int columns)
    : os_(os),
      interactive_(interactive),
      epoch_(epoch),
      epochs_(epochs),
      total_(total_steps),
      columns_(columns),
      start_(std::chrono::steady_clock::now()),
      last_draw_(start_) {
  if (interactive_) os_ << "Epoch " << epoch_ + 1 << "/" << epochs_ << "\n" << std::flush;
}

bool ProgressBar::stdout_is_terminal() {
  return is_interactive_terminal(STDOUT_FILENO);
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
  return tern::format_duration(s);
}

size_t ProgressBar::width() const {
  const int columns = columns_ > 0 ? columns_ : terminal_columns(STDOUT_FILENO);
  // One column short: a character in the last column leaves some terminals waiting to wrap.
  return static_cast<size_t>(std::max(columns - 1, 20));
}

double ProgressBar::eta(int64_t step, std::chrono::steady_clock::time_point now) const {
  if (total_ <= 0 || step >= total_ || step <= 0) return 0;
  double per_step;
  if (first_step_ >= 0 && step > first_step_) {
    per_step = std::chrono::duration<double>(now - first_step_time_).count() /
               static_cast<double>(step - first_step_);
  } else {
    per_step = std::chrono::duration<double>(now - start_).count() / static_cast<double>(step);
  }
  return per_step * static_cast<double>(total_ - step);
}

std::string ProgressBar::bar_line(int64_t step, const OrderedLogs& logs, const std::string& tail,
                                  size_t width) const {
  std::string head;
  int bar_width = 0;
  if (total_ > 0) {
    const int digits = static_cast<int>(std::to_string(total_).size());
    char counter[64];
    std::snprintf(counter, sizeof(counter), "%*lld/%lld", digits, static_cast<long long>(step),
                  static_cast<long long>(total_));
    head = counter;
    bar_width = kBarWidth;
  } else {
    head = std::to_string(step) + "/Unknown";
  }
  OrderedLogs shown = logs;
  auto length = [&](int bar) {
    return head.size() + (bar > 0 ? static_cast<size_t>(bar) + 3 : 0) + tail.size() +
           format_logs(shown).size();
  };
  // Narrow the bar, then leave logs out from the end, then drop the bar; cut what still overflows.
  if (bar_width > 0 && length(bar_width) > width) {
    const size_t over = length(bar_width) - width;
    bar_width = std::max(kMinBarWidth, bar_width - static_cast<int>(over));
  }
  while (!shown.empty() && length(bar_width) > width) shown.pop_back();
  if (bar_width > 0 && length(bar_width) > width) bar_width = 0;
  std::string line = head;
  if (bar_width > 0) line += " " + bar_text(step, total_, bar_width);
  return cut_to_width(line + tail + format_logs(shown), width);
}

void ProgressBar::update(int64_t step, const OrderedLogs& logs) {
  if (!interactive_) return;
  auto now = std::chrono::steady_clock::now();
  if (first_step_ < 0) {
    first_step_ = step;
    first_step_time_ = now;
  }
  bool last = total_ > 0 && step >= total_;
  if (!last && std::chrono::duration<double>(now - last_draw_).count() < 0.1) return;
  last_draw_ = now;
  const std::string tail =
      total_ > 0 ? " - ETA: " + format_duration(eta(step, now))
                 : " - " + format_duration(std::chrono::duration<double>(now - start_).count());
  os_ << "\r" << bar_line(step, logs, tail, width()) << "\033[K" << std::flush;
}

void ProgressBar::finish(int64_t steps, int64_t samples, const OrderedLogs& logs) {
  double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  double per_step_ms = steps > 0 ? elapsed * 1000 / static_cast<double>(steps) : 0;
  double sps = elapsed > 0 ? static_cast<double>(samples) / elapsed : 0;
  char time_per_step[64], throughput[64];
  if (per_step_ms < 1) {  // Keras too: "0s 431us/step"
    std::snprintf(time_per_step, sizeof(time_per_step), "%s %.0fus/step",
                  format_duration(elapsed).c_str(), per_step_ms * 1000);
  } else {
    std::snprintf(time_per_step, sizeof(time_per_step), "%s %.0fms/step",
                  format_duration(elapsed).c_str(), per_step_ms);
  }
  std::snprintf(throughput, sizeof(throughput), "%.0f samples/s", sps);
  const std::string timing = std::string(time_per_step) + " - " + throughput;
  if (interactive_) {
    std::vector<std::string> parts = {
        std::to_string(steps) + "/" + std::to_string(steps) + " " + bar_text(1, 1, kBarWidth),
        time_per_step, throughput};
    for (const auto& [name, v] : logs) parts.push_back(format_logs({{name, v}}).substr(3));
    os_ << "\r" << break_lines(parts, width()) << std::flush;
  } else {
    os_ << "Epoch " << epoch_ + 1 << "/" << epochs_ << " - " << steps << " steps - " << timing
        << format_logs(logs) << "\n"
        << std::flush;
  }
}

void ProgressBar::interrupted(int64_t step, const OrderedLogs& logs) {
  if (interactive_) {
    const double elapsed =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    os_ << "\r" << bar_line(step, logs, " - interrupted after " + format_duration(elapsed), width())
        << "\033[K\n"
        << std::flush;
  } else {
    os_ << "Epoch " << epoch_ + 1 << "/" << epochs_ << " - interrupted after " << step << " steps"
        << format_logs(logs) << "\n"
        << std::flush;
  }
}

}  // namespace tern::train
