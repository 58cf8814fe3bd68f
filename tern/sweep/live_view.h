// The sweep's live view: on a terminal, a block redrawn in place (one line per running trial:
// epoch, objective, ETA; then the counts done / running / stopped / failed / pending and the
// elapsed time) with events (a trial started, stopped, failed, done) printed above it; on
// anything else, plain lines: the events, each epoch a trial reports, and the counts when they
// change.
#pragma once

#include <ostream>
#include <string>

#include "tern/sweep/sweep_state.h"

namespace tern::sweep {

class LiveView {
 public:
  LiveView(std::ostream& os, bool terminal) : os_(os), terminal_(terminal) {}
  // A line printed once (above the block on a terminal).
  void event(const std::string& line, const SweepState& state, double now);
  // A trial reported an epoch (plain mode prints it; a terminal redraws).
  void epoch(const TrialRecord& trial, const SweepState& state, double now);
  // Redraws the block (at most every 0.2 s unless `force`); plain mode prints changed counts.
  void update(const SweepState& state, double now, bool force = false);
  // Clears the block (a terminal) before the final table.
  void finish();

  // "done 3 | running 2 | stopped 1 | failed 0 | pending 21 | 1m02s"
  static std::string counts(const SweepState& state, double now);
  // "trial_004  lr=0.01 wd=0.0001  epoch 2/3  val_accuracy 0.8123  ETA 4s"
  static std::string trial_line(const TrialRecord& trial, const SweepState& state, double now);

 private:
  void clear();
  std::ostream& os_;
  bool terminal_;
  int drawn_lines_ = 0;
  double last_draw_ = -1;
  std::string last_counts_;
};

// "4s", "1m02s", "1h05m".
std::string format_duration(double seconds);

}  // namespace tern::sweep
