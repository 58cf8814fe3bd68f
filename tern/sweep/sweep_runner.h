// Runs a sweep: each trial a `tern train` process (through a Launcher) in its own folder under
// <out>/trials/, its per-epoch CSV log followed as it grows, early stopping applied across trials,
// the state saved atomically at every change, the live view drawn, and at the end the results
// files, best.toml and the HParams sessions. A trial that crashes is marked failed; the sweep goes
// on. With `resume`, finished trials are kept and unfinished ones start again (from their last
// checkpoint when they have one, `tern train --resume`); none is run twice once finished.
//
//   sweep::SweepSpec spec = sweep::load_sweep("examples/fashion_mnist_sweep.toml");
//   sweep::SweepState state = sweep::run_sweep(spec, {.tern_binary = "/usr/bin/tern"});
#pragma once

#include <iostream>
#include <string>

#include "tern/sweep/sweep_spec.h"
#include "tern/sweep/sweep_state.h"

namespace tern::sweep {

struct RunOptions {
  std::string tern_binary = "tern";  // runs the trials ("tern" is found on PATH)
  std::string out_dir;               // "" -> spec.out_dir, else runs/sweeps/<sweep file stem>
  bool resume = false;
  int cores = 0;                   // 0: std::thread::hardware_concurrency()
  std::ostream* out = &std::cout;  // live view and the final table
  bool terminal = false;           // redraw the live view in place
  double poll_seconds = 0.05;
};

// The folder a sweep writes to (RunOptions::out_dir, the spec's `out`, or the default).
std::string sweep_dir(const SweepSpec& spec, const RunOptions& options);

// Validates (validate_sweep: InvalidArgument / NotFound before any trial starts), runs, and
// returns the final state. FailedPrecondition if the folder holds a sweep and `resume` is off,
// or if `resume` finds a state whose trials differ from the sweep file's.
SweepState run_sweep(const SweepSpec& spec, const RunOptions& options);

}  // namespace tern::sweep
