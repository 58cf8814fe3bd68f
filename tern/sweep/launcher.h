// Launchers run trials (`tern train` command lines) somewhere and report on them: local child
// processes, `mpirun -np 1 --host H` on a host list, or a Slurm job array. Stopping a trial
// discards it, so stop() may kill without grace.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "tern/sweep/sweep_spec.h"

namespace tern::sweep {

struct TrialLaunch {
  int id = 0;
  std::string dir;                // the trial folder (exists); train.log is written there
  std::vector<std::string> argv;  // argv[0]: the tern binary, then "train", BASE, ...
};

struct TrialPoll {
  enum class State { kQueued, kRunning, kExited } state = State::kQueued;
  int exit_code = 0;   // kExited: the command's exit status, -1 when unknown
  int signal = 0;      // kExited by a signal (SIGKILL from stop(), or from outside)
  std::string detail;  // kExited abnormally: what is known ("killed by signal 9")
  // Unix seconds when the trial's command began, where the launcher knows it (Slurm: the job
  // script's own clock); 0 when not. A trial first seen already exited then keeps its real span.
  double started_at = 0;
};

class Launcher {
 public:
  virtual ~Launcher() = default;
  virtual std::string name() const = 0;
  // True when start() takes every trial at once and queues them itself (Slurm); otherwise the
  // caller starts a trial when one of its `parallel` slots frees.
  virtual bool queues() const { return false; }
  virtual void start(const std::vector<TrialLaunch>& trials) = 0;
  virtual TrialPoll poll(int id) = 0;
  virtual void stop(int id) = 0;
  // Where a started trial runs ("pid 4242", "slurm 17_3", "node2 pid 77"), kept in the sweep
  // state so that a resumed sweep can end a leftover with stop_leftover().
  virtual std::string job_ref(int id) const = 0;
  // Ends what a previous (killed) sweep left running for the trial in `trial_dir`, if anything.
  virtual void stop_leftover(const std::string& job_ref, const std::string& trial_dir) = 0;
};

// `parallel`: trials at once (Slurm: the job array's throttle); `threads`: per trial (Slurm:
// --cpus-per-task); `sweep_dir`: where the launcher writes its own files (sbatch scripts).
std::unique_ptr<Launcher> make_launcher(const LauncherSpec& spec, int parallel, int threads,
                                        const std::string& sweep_dir);

// --- pieces, for the launchers and their tests ---

// local and mpirun (process_launcher.cc).
std::unique_ptr<Launcher> make_process_launcher(const LauncherSpec& spec);

// 'it'\''s' quoting for /bin/sh.
std::string shell_quote(const std::string& s);

// Runs argv (argv[0] found on PATH), returns its exit code and stdout (stderr joins stdout).
int run_capture(const std::vector<std::string>& argv, std::string& output);

}  // namespace tern::sweep
