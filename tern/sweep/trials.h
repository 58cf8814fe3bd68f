// The trials of a sweep: the search space expanded (grid product, or seeded random samples) and
// each trial's `tern train --set` list: the sweep's [set] keys, the trial's hyperparameters, the
// budget's epochs, its threads, and its own output folder (CSV log, checkpoints, every callback
// path the base config names).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "tern/sweep/sweep_spec.h"

namespace tern::sweep {

struct TrialSpec {
  int id = 0;
  std::vector<Override> overrides;  // the searched keys only
};

// Grid: every combination, the last key varying fastest; random: `trials` samples drawn with a
// Philox stream seeded by `seed` (same file, same trials). Capped at budget.max_trials.
std::vector<TrialSpec> expand_trials(const SweepSpec& spec);

// The order trials start in: ids 0..n-1, or their Philox shuffle (seeded by the random search's
// seed, 0 for a grid) when spec.shuffled_order.
std::vector<int> launch_order(const SweepSpec& spec, int trials);

// "trial_007".
std::string trial_name(int id);

// What a trial runs with besides its hyperparameters.
struct TrialEnv {
  std::string dir;  // the trial's output folder (absolute)
  int threads = 1;
  int64_t epochs = 0;  // 0: the base config's
  // The base config's explicit keys (TrainConfig::effective): callback paths it names are moved
  // into the trial folder so trials never share a file.
  std::map<std::string, std::string> base_keys;
};

// The "key=value" strings for `tern train BASE --set ...` (and for config::load_config).
std::vector<std::string> trial_overrides(const SweepSpec& spec, const TrialSpec& trial,
                                         const TrialEnv& env);

// The trial's per-epoch CSV log and checkpoint folder (inside env.dir).
std::string trial_csv_path(const std::string& trial_dir);
std::string trial_checkpoint_dir(const std::string& trial_dir);

// A TOML basic string ("a \"b\""): paths handed to --set.
std::string toml_string(const std::string& s);

}  // namespace tern::sweep
