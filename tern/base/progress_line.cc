// ProgressLine drawing.
#include "tern/base/progress_line.h"

#include <cstdio>

#include "tern/base/terminal.h"

namespace tern {
std::string format_duration(double s) {
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

ProgressLine::ProgressLine(std::ostream& os, std::string label, std::string unit, int64_t total,
                           bool interactive, int fd, int columns, double log_interval)
    : os_(os),
      label_(std::move(label)),
      unit_(std::move(unit)),
      total_(total),
      interactive_(interactive),
      fd_(fd),
      columns_(columns),
      log_interval_(log_interval),
      start_(std::chrono::steady_clock::now()),
      last_draw_(start_) {}

ProgressLine::~ProgressLine() {
  finish();
}

std::string ProgressLine::text(int64_t done, const std::string& note, double elapsed) const {
  std::string t = label_ + ": " + std::to_string(done);
  if (total_ >= 0) t += "/" + std::to_string(total_);
  if (!unit_.empty()) t += " " + unit_;
  char buf[64];
  if (total_ > 0) {
    std::snprintf(buf, sizeof(buf), " (%.0f%%)", 100.0 * static_cast<double>(done) / total_);
    t += buf;
  }
  if (elapsed > 0 && done > 0) {
    const double rate = static_cast<double>(done) / elapsed;
    std::snprintf(buf, sizeof(buf), " - %.0f/s", rate);
    t += buf;
    if (total_ > done) t += " - ETA " + format_duration(static_cast<double>(total_ - done) / rate);
  }
  if (!note.empty()) t += " - " + note;
  return t;
}

void ProgressLine::update(int64_t done, const std::string& note) {
  if (finished_) return;
  const auto now = std::chrono::steady_clock::now();
  const double since_draw = std::chrono::duration<double>(now - last_draw_).count();
  const double elapsed = std::chrono::duration<double>(now - start_).count();
  if (interactive_) {
    if (drawn_ && !force_draw_ && since_draw < 0.1 && note == last_note_) return;
    const int columns = columns_ > 0 ? columns_ : terminal_columns(fd_);
    // One column short of the width: a character in the last column would wrap on some terminals.
    const size_t width = static_cast<size_t>(columns > 1 ? columns - 1 : 1);
    os_ << "\r" << cut_to_width(text(done, note, elapsed), width) << "\033[K" << std::flush;
  } else {
    if (since_draw < log_interval_) return;
    os_ << text(done, note, elapsed) << "\n" << std::flush;
  }
  drawn_ = true;
  force_draw_ = false;
  last_draw_ = now;
  last_note_ = note;
}

void ProgressLine::restart(int64_t total) {
  total_ = total;
  start_ = std::chrono::steady_clock::now();
  force_draw_ = true;
}

void ProgressLine::finish() {
  if (finished_) return;
  finished_ = true;
  if (interactive_ && drawn_) os_ << "\r\033[K" << std::flush;
}

}  // namespace tern
