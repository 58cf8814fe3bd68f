// The Slurm launcher: every trial of a sweep submitted as one job array (`sbatch --array=IDS%P`),
// one array task per trial (its task id = the trial id). A task writes <trial>/slurm_started when
// it starts, runs the trial's command with its output in <trial>/train.log, then writes its exit
// code to <trial>/exit_code. The sweep polls those files and `squeue`; a task that leaves the
// queue without an exit code (cancelled, timed out, node failure) is reported as failed. stop()
// is `scancel JOB_TASK`. Trial folders must be on a file system the compute nodes share.
#pragma once

#include <string>
#include <vector>

#include "tern/sweep/launcher.h"

namespace tern::sweep {

struct SbatchOptions {
  std::string job_name = "tern-sweep";
  int parallel = 1;  // %P: tasks running at once
  int cpus_per_task = 1;
  std::string workdir;                  // the tasks' working directory (relative paths in configs)
  std::string partition;                // "" = the default partition
  std::vector<std::string> extra_args;  // further #SBATCH lines ("--time=01:00:00")
};

// The job-array script for `trials` (their ids form --array).
std::string sbatch_script(const std::vector<TrialLaunch>& trials, const SbatchOptions& options);

std::unique_ptr<Launcher> make_slurm_launcher(const LauncherSpec& spec, int parallel, int threads,
                                              const std::string& sweep_dir);

}  // namespace tern::sweep
