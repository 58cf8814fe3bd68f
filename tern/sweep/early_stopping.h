// Early stopping across the trials of a sweep, asked each time a trial reports an epoch.
//
// Median stopping rule (Golovin et al., "Google Vizier", 2017): after grace_epochs, a trial
// whose best value so far is worse than the median of the other trials' running means over the
// same number of epochs is stopped (at least min_trials others must have reached that epoch).
//
// ASHA (Li et al., "A System for Massively Parallel Hyperparameter Tuning", 2020), in its stopping
// form: rungs at min_epochs * eta^k epochs below max_epochs; a trial reaching a rung is recorded
// there and continues only if it ranks in the top max(1, floor(n / eta)) of the n trials
// recorded at that rung so far (itself included); otherwise it is stopped. Survivors simply run
// on, so no trial ever pauses.
//
// Does: decide from the numbers given, deterministically. Does not: read logs or stop processes.
// NaN (a diverged trial) ranks below every number.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "tern/sweep/sweep_spec.h"

namespace tern::sweep {

struct StopDecision {
  bool stop = false;
  std::string reason;  // why, when stop: "asha rung 1 (epoch 1): 0.1000 not in the top 1 of 3"
};

class EarlyStopper {
 public:
  virtual ~EarlyStopper() = default;
  // Trial `trial` finished epoch `epoch` (1-based) with objective `value`. Epochs of a trial
  // arrive in order; a repeated epoch (a resumed trial) replaces the earlier value.
  virtual StopDecision report(int trial, int64_t epoch, double value) = 0;
  // Records without deciding (the histories of finished trials when a sweep resumes).
  virtual void record(int trial, int64_t epoch, double value) = 0;
};

// kNone: a stopper that never stops. `max_epochs`: the trials' epochs (ASHA's default top).
std::unique_ptr<EarlyStopper> make_early_stopper(const EarlyStoppingSpec& spec,
                                                 const Objective& objective, int64_t max_epochs);

// ASHA's rung epochs: min_epochs * eta^k (rounded), strictly below max_epochs.
std::vector<int64_t> asha_rungs(int64_t min_epochs, double reduction_factor, int64_t max_epochs);

}  // namespace tern::sweep
