// The job-array script the Slurm launcher submits (a real Slurm run is in
// tools/tern/sweep_command_test.cc), and shell quoting / run_capture.
#include "tern/sweep/slurm_launcher.h"

#include <gtest/gtest.h>

namespace tern::sweep {
namespace {

TEST(SlurmLauncher, ScriptRunsOneTrialPerArrayTask) {
  std::vector<TrialLaunch> trials = {
      {.id = 0,
       .dir = "/sw/trials/trial_000",
       .argv = {"/bin/tern", "train", "base.toml", "--set", "output.dir=\"/sw/trials/trial_000\""}},
      {.id = 3,
       .dir = "/sw/trials/trial_003",
       .argv = {"/bin/tern", "train", "base.toml", "--set", "x='it'"}}};
  SbatchOptions o{.parallel = 2,
                  .cpus_per_task = 1,
                  .workdir = "/work",
                  .partition = "debug",
                  .extra_args = {"--time=00:05:00"}};
  const std::string s = sbatch_script(trials, o);
  for (const char* line :
       {"#!/bin/bash\n", "#SBATCH --array=0,3%2\n", "#SBATCH --cpus-per-task=1\n",
        "#SBATCH --chdir=/work\n", "#SBATCH --partition=debug\n", "#SBATCH --time=00:05:00\n",
        "  0)\n    dir=/sw/trials/trial_000\n    set -- /bin/tern train base.toml --set "
        "'output.dir=\"/sw/trials/trial_000\"' ;;\n",
        "    set -- /bin/tern train base.toml --set 'x='\\''it'\\''' ;;\n",
        "date +%s.%N > \"$dir/slurm_started\"\n", "\"$@\" >> \"$dir/train.log\" 2>&1\n",
        "mv \"$dir/exit_code.tmp\" \"$dir/exit_code\"\n"}) {
    EXPECT_NE(s.find(line), std::string::npos) << line << "\n---\n" << s;
  }
  // bash accepts it.
  std::string out;
  EXPECT_EQ(run_capture({"bash", "-n", "-c", s}, out), 0) << out;
}

TEST(SlurmLauncher, ShellQuoteRoundTripsThroughSh) {
  const std::string tricky = "a b'c\"$HOME\\";
  std::string out;
  ASSERT_EQ(run_capture({"sh", "-c", "printf %s " + shell_quote(tricky)}, out), 0);
  EXPECT_EQ(out, tricky);
  EXPECT_EQ(shell_quote("plain/path-1.toml"), "plain/path-1.toml");
  EXPECT_EQ(run_capture({"sh", "-c", "exit 3"}, out), 3);
}

}  // namespace
}  // namespace tern::sweep
