// The sweep in TensorBoard's HParams dashboard (`tensorboard --logdir SWEEP_DIR`): the experiment
// (searched keys and their domains, the metrics) in the sweep folder, and one session per trial
// in the trial's folder, written when the trial ends (done or stopped early: success; failed:
// failure; TensorBoard has no "stopped"),
// with its per-epoch metrics as scalars. The one place that calls tern/io/hparams_plugin.h; the
// event layout is in docs/hparams_events.md.
#pragma once

#include <string>

#include "tern/sweep/sweep_spec.h"
#include "tern/sweep/sweep_state.h"

namespace tern::sweep {

// Once per sweep folder (a resumed sweep keeps the first one).
void write_hparams_experiment(const std::string& sweep_dir, const SweepSpec& spec,
                              const SweepState& state);

// The session of a finished trial, in <sweep_dir>/trials/<name>. Metrics: every per-epoch log
// column (NaN values of a diverged trial left out: TensorBoard cannot show them) and the test_*
// metrics at the last epoch.
void write_hparams_session(const std::string& sweep_dir, const TrialRecord& trial);

}  // namespace tern::sweep
