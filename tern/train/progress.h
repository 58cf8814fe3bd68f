// A Keras-like progress bar for one epoch:
//   Epoch 1/5
//   123/469 [=======>......................] - ETA: 5s - loss: 0.4321 - accuracy: 0.8765
// ending with the epoch time, time per step, samples/s and the final logs. When the stream is not a
// terminal, nothing is drawn per step; one summary line is printed per epoch instead.
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
  // total_steps < 0: unknown (no bar, no ETA).
  ProgressBar(std::ostream& os, bool interactive, int epoch, int epochs, int64_t total_steps);
  void update(int64_t step, const OrderedLogs& logs);
  // The final line, with samples/s over the epoch.
  void finish(int64_t steps, int64_t samples, const OrderedLogs& logs);

  // True if stdout is a terminal (and TERM is not "dumb").
  static bool stdout_is_terminal();
  static std::string format_logs(const OrderedLogs& logs);
  static std::string format_duration(double seconds);

 private:
  std::ostream& os_;
  bool interactive_;
  int epoch_, epochs_;
  int64_t total_;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_draw_;
};

}  // namespace tern::train
