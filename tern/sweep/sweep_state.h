// The state of a sweep, kept in <sweep dir>/sweep_state.json and rewritten atomically
// (io::write_file_atomically) whenever a trial starts, reports an epoch or ends: what `--resume`
// continues from and what `tern sweep report` reads.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "tern/sweep/epoch_log.h"
#include "tern/sweep/sweep_spec.h"

namespace tern::sweep {

enum class TrialStatus { kPending, kRunning, kDone, kStopped, kFailed };
std::string status_name(TrialStatus s);  // pending running done stopped failed

struct TrialRecord {
  int id = 0;
  std::string name;  // trial_007: its folder under <sweep dir>/trials/
  std::vector<Override> overrides;
  std::vector<std::string> sets;  // the exact --set list it runs with (kept across resumes)
  TrialStatus status = TrialStatus::kPending;
  std::string reason;                          // stopped / failed: why
  std::vector<EpochRow> history;               // per epoch, from its CSV log (index = epoch - 1)
  std::map<std::string, double> test_metrics;  // from its --metrics-json (done trials)
  double start_time = 0, end_time = 0;         // Unix seconds of the last attempt
  double wall_seconds = 0;                     // all attempts together
  int attempts = 0;
  std::string job;  // Launcher::job_ref of the last attempt

  int64_t epochs_run() const { return static_cast<int64_t>(history.size()); }
  bool finished() const {
    return status == TrialStatus::kDone || status == TrialStatus::kStopped ||
           status == TrialStatus::kFailed;
  }
  // The objective after the last epoch (test_* from test_metrics), and the best over epochs;
  // NaN when unknown.
  double final_metric(const Objective& o) const;
  double best_metric(const Objective& o) const;
  // Adds or replaces the row of its epoch (a resumed trial repeats epochs).
  void add_row(const EpochRow& row);
};

struct SweepState {
  std::string sweep_file, base_config;
  Objective objective;
  std::string rule;                  // early-stopping rule name
  int64_t epochs = 0;                // per trial
  std::vector<std::string> hparams;  // the searched keys, in order
  double start_time = 0;
  std::vector<TrialRecord> trials;
};

std::string state_path(const std::string& sweep_dir);  // <dir>/sweep_state.json
void save_state(const std::string& sweep_dir, const SweepState& state);
// NotFound when the folder holds no sweep; DataLoss naming the file when it cannot be read.
SweepState load_state(const std::string& sweep_dir);

}  // namespace tern::sweep
