// What a sweep leaves behind: results.csv and results.json (every trial: overrides, final and
// best objective, epochs run, wall time, status), the ranked table printed at the end and by
// `tern sweep report`, and best.toml: the base config with the best trial's keys applied.
#pragma once

#include <string>
#include <vector>

#include "tern/sweep/sweep_state.h"

namespace tern::sweep {

// Done trials first, then stopped, failed, running and pending; within each, by final objective
// (best first, unknown last), then by id.
std::vector<const TrialRecord*> rank_trials(const SweepState& state);

// The ranked table (at most `max_rows` trials; 0 = all), one line per trial.
std::string results_table(const SweepState& state, size_t max_rows = 0);

// <dir>/results.csv and <dir>/results.json (atomic writes).
void write_results(const std::string& dir, const SweepState& state);

// <dir>/best.toml from the best done trial (stopped ones if none finished): its --set list minus
// what only the sweep needs (threads, the trial's CSV log and checkpoints), output.dir =
// <dir>/best. Returns its path, or "" when no trial has a result.
std::string write_best_config(const std::string& dir, const SweepState& state);

// "optimizer.learning_rate" -> "learning_rate", "data.transforms[2].max_delta" -> "max_delta".
std::string short_key(const std::string& key);

}  // namespace tern::sweep
