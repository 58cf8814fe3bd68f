// One line of progress for long work outside training (`tern data convert`, `tern data bench`,
// `tern export`):
//   convert: 12000/60000 images (20%) - 2400/s - ETA 20s
// On a terminal the line is redrawn in place (at most 10 times a second, and at once when the note
// changes: a new stage or pass is always shown; cut to the terminal's width so it never wraps) and
// erased by finish(), leaving the caller's summary as the record.
// Elsewhere (a log file, a pipe) it prints a plain line at most every `log_interval` seconds, so
// logs show that the work moves without filling up. Not thread-safe: callers serialize update().
#pragma once

#include <chrono>
#include <cstdint>
#include <ostream>
#include <string>

namespace tern {

// "42s", "3:07", "1:02:03": an elapsed time or ETA as the progress displays show it.
std::string format_duration(double seconds);

class ProgressLine {
 public:
  // total < 0: unknown (no percentage, no ETA). `fd` is the descriptor behind `os` (asked for
  // its width); columns > 0 fixes the width instead (tests).
  ProgressLine(std::ostream& os, std::string label, std::string unit, int64_t total,
               bool interactive, int fd = 2, int columns = 0, double log_interval = 10);
  ~ProgressLine();  // finish()

  void set_total(int64_t total) { total_ = total; }
  // Starts counting again from 0 with `total` (a new pass of the same work): the rate and ETA are
  // this pass's, and the next update() draws.
  void restart(int64_t total);
  // `done` units finished; `note` is appended (e.g. "pass 2/3").
  void update(int64_t done, const std::string& note = "");
  // Erases the line on a terminal; idempotent.
  void finish();

  // "12000/60000 images (20%) - 2400/s - ETA 20s [- note]", the text update() draws.
  std::string text(int64_t done, const std::string& note, double elapsed) const;

 private:
  std::ostream& os_;
  std::string label_, unit_;
  int64_t total_;
  bool interactive_;
  int fd_, columns_;
  double log_interval_;
  bool drawn_ = false, finished_ = false, force_draw_ = false;
  std::string last_note_;
  std::chrono::steady_clock::time_point start_, last_draw_;
};

}  // namespace tern
