// A sweep file (TOML, docs/sweeps.md): the base training config, the search space (grid or
// random), the objective, the budget, parallelism, early stopping and the launcher, read with
// checked keys like a training config (file:line, did-you-mean). load_sweep reads the file only;
// validate_sweep (validate_sweep.h) checks every trial's overrides against the base config.
//
//   base = "fashion_mnist_sweep_base.toml"      # relative to the sweep file
//   [grid]
//   "optimizer.learning_rate" = [1e-3, 3e-3, 1e-2]
//   [objective]
//   metric = "val_accuracy"
//   mode = "max"
#pragma once

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

namespace tern::sweep {

// One hyperparameter value: the TOML text handed to `tern train --set key=TEXT`, and its typed
// form (integers are numbers here) for HParams, plots and tables.
struct ParamValue {
  std::string toml;
  std::variant<double, std::string, bool> value;
  bool operator==(const ParamValue& o) const { return toml == o.toml; }
};

// A config key and its value in one trial.
struct Override {
  std::string key;
  ParamValue value;
  bool operator==(const Override& o) const = default;
};

struct GridAxis {
  std::string key;
  std::vector<ParamValue> values;
};

enum class Distribution { kUniform, kLogUniform, kChoice };

struct RandomParam {
  std::string key;
  Distribution distribution = Distribution::kUniform;
  double low = 0, high = 0;         // kUniform, kLogUniform
  std::vector<ParamValue> choices;  // kChoice
};

struct SearchSpace {
  enum class Method { kGrid, kRandom } method = Method::kGrid;
  std::vector<GridAxis> grid;  // in the file's key order; the last key varies fastest
  std::vector<RandomParam> random;
  int64_t random_trials = 0;
  uint64_t seed = 0;
};

struct Objective {
  std::string metric = "val_accuracy";  // a per-epoch log (loss, val_accuracy, ...) or test_*
  // The file's "auto" (its default): kMin for names holding "loss" or "error", else kMax.
  enum class Mode { kMax, kMin } mode = Mode::kMax;
  bool per_epoch() const { return metric.rfind("test_", 0) != 0; }
  // True when a is strictly better than b (NaN is worse than anything).
  bool better(double a, double b) const;
};

struct Budget {
  int64_t max_trials = 0;  // 0: every trial of the search space
  int64_t max_epochs = 0;  // 0: the base config's training.epochs; else --set training.epochs
  double max_seconds = 0;  // 0: no limit on the sweep's wall time
};

struct EarlyStoppingSpec {
  enum class Rule { kNone, kMedian, kAsha } rule = Rule::kNone;
  // median: no decision before grace_epochs; compares with at least min_trials other trials.
  int64_t grace_epochs = 1;
  int64_t min_trials = 2;
  // asha: rungs at min_epochs * reduction_factor^k epochs (below max_epochs); at each rung a
  // trial continues only in the top 1/reduction_factor of the trials that reached it.
  double reduction_factor = 3;
  int64_t min_epochs = 1;
  int64_t max_epochs = 0;  // 0: the trials' epochs
};

struct LauncherSpec {
  enum class Kind { kLocal, kSlurm, kMpirun } kind = Kind::kLocal;
  // mpirun: "host" or "host:slots"; a trial takes one slot.
  std::vector<std::string> hosts;
  std::vector<std::string> mpirun_args;
  // slurm: sbatch options for the job array.
  std::string partition;
  std::vector<std::string> sbatch_args;
};

struct SweepSpec {
  std::string path;         // the sweep file
  std::string base_config;  // resolved against the sweep file's folder
  std::string out_dir;      // "" -> runs/sweeps/<sweep file stem>
  SearchSpace search;
  Objective objective;
  Budget budget;
  int parallel = 1;           // trials at once
  int threads_per_trial = 0;  // 0: max(1, cores / parallel)
  bool checkpoints = true;    // [callbacks.checkpoint] per trial (resume continues from it)
  // Launch order: the search space's (false) or a seeded shuffle of it (true; the file's
  // `order = "auto"` shuffles when early stopping is on, so that a grid's order does not decide
  // which trials reach a rung first).
  bool shuffled_order = false;
  EarlyStoppingSpec early_stopping;
  LauncherSpec launcher;
  // Trial overrides from [set]: fixed keys applied to every trial (e.g. training.steps_per_epoch).
  std::vector<Override> fixed;
};

// InvalidArgument naming the file, line and key for an unknown key, a wrong type or a value out
// of range (empty grid list, zero trials, ...); NotFound for a missing file.
SweepSpec load_sweep(const std::string& path);

std::string rule_name(EarlyStoppingSpec::Rule rule);  // "none" | "median" | "asha"
std::string launcher_name(LauncherSpec::Kind kind);   // "local" | "slurm" | "mpirun"
std::string format_param(const ParamValue& v);        // 0.001, adamw, true (no quotes)
ParamValue number_param(double v);                    // shortest round-trip TOML float

}  // namespace tern::sweep
