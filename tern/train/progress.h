// A Keras-like progress bar for one epoch:
//   Epoch 1/5
//   123/469 [=======>......................] - ETA: 5s - loss: 0.4321 - accuracy: 0.8765
// ending with the epoch time, time per step, samples/s and the final logs.
//
// On a terminal (verbose 1) the bar is redrawn in place and always fits the terminal's current
// width (asked on every draw: TIOCGWINSZ): the bar narrows (to 10 columns), then logs are left out
// from the end, then the line is cut, so `\r` always returns to the line's start and no stale
// line is left behind; the final line breaks at " - " into indented lines instead of wrapping.
// The ETA is the mean step time since the first step (which compiles) times the steps left.
// Elsewhere (not a terminal, or verbose 2, Keras' "one line per epoch") nothing is drawn per step
// and one summary line is printed per epoch.
#pragma once

#include <chrono>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

namespace tern::train {

using OrderedLogs = std::vector<std::pair<std::string, double>>;

class ProgressBar {
 public:
  // total_steps < 0: unknown (no bar, no ETA). columns > 0 fixes the width (tests); 0 asks the
  // terminal on stdout.
  ProgressBar(std::ostream& os, bool interactive, int epoch, int epochs, int64_t total_steps,
              int columns = 0);
  void update(int64_t step, const OrderedLogs& logs);
  // The final line, with samples/s over the epoch.
  void finish(int64_t steps, int64_t samples, const OrderedLogs& logs);
  // The epoch was cut short after `step` (an interrupt): the bar as it stands, ended.
  void interrupted(int64_t step, const OrderedLogs& logs);

  // True if stdout is a terminal (and TERM is not "dumb").
  static bool stdout_is_terminal();
  static std::string format_logs(const OrderedLogs& logs);
  static std::string format_duration(double seconds);
  // The in-place line for `step` ("12/469 [====>....]" + tail + logs) fitted to `width`
  // characters: the bar narrows, then logs are left out from the end (exposed for tests).
  std::string bar_line(int64_t step, const OrderedLogs& logs, const std::string& tail,
                       size_t width) const;

 private:
  size_t width() const;
  double eta(int64_t step, std::chrono::steady_clock::time_point now) const;

  std::ostream& os_;
  bool interactive_;
  int epoch_, epochs_;
  int64_t total_;
  int columns_;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_draw_;
  // The first step seen: the ETA is measured from it (its time includes compiling the step).
  int64_t first_step_ = -1;
  std::chrono::steady_clock::time_point first_step_time_;
};

}  // namespace tern::train
