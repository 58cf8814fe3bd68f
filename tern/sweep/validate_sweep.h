// Checks a sweep before its first trial starts: the base config loads with every trial's --set
// list through config::load_config (a misspelt key or a wrong type is reported as `tern train
// --set` reports it, naming the key and the trial), the objective names a metric the config logs,
// parallelism fits the trials (and the mpirun hosts), the early-stopping epochs fit the budget.
// Every problem is an InvalidArgument (NotFound for a missing base config) naming the sweep file.
#pragma once

#include <string>
#include <vector>

#include "tern/sweep/sweep_spec.h"
#include "tern/sweep/trials.h"

namespace tern::sweep {

struct SweepPlan {
  std::vector<TrialSpec> trials;
  int parallel = 1;
  int threads_per_trial = 1;
  int64_t epochs = 0;  // training.epochs of the trials (the largest, when it is searched)
  std::map<std::string, std::string> base_keys;
};

// `spec` with the command line's --parallel already applied; `cores`: the machine's (threads per
// trial default to max(1, cores / parallel)).
SweepPlan validate_sweep(const SweepSpec& spec, int cores);

// Slots of an mpirun host list ("a", "b:2" -> 3); InvalidArgument for a bad entry.
int mpirun_slots(const std::vector<std::string>& hosts);

}  // namespace tern::sweep
