// `tern sweep SWEEP.toml [--parallel N] [--resume] [--out DIR]` and `tern sweep report DIR
// [--plot FILE.png]`: flags and exit codes around tern/sweep (a bad sweep file exits 2 before any
// trial starts).
#include <CLI/CLI.hpp>

#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <iostream>

#include "tern/base/error.h"
#include "tern/sweep/plot.h"
#include "tern/sweep/results.h"
#include "tern/sweep/sweep_runner.h"
#include "tools/tern/cli_parse.h"
#include "tools/tern/commands.h"

namespace tern::tools {
namespace {

// This program, to run the trials with (`tern train`).
std::string self_binary() {
  std::error_code ec;
  std::filesystem::path p = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string("tern") : p.string();
}

int cmd_sweep_report(int argc, char** argv) {
  CLI::App app{"Print the ranked table of a sweep folder again; optionally plot it as a PNG.",
               "tern sweep report"};
  init_app(app);
  std::string dir, plot;
  int top = 0, curves = 5;
  app.add_option("dir", dir, "the sweep folder (holds sweep_state.json)")->required();
  app.add_option("--plot", plot,
                 "write a PNG: the objective against each hyperparameter, and learning curves");
  app.add_option("--top", top, "print only the best N trials (0 = all)");
  app.add_option("--curves", curves, "learning curves of the best N trials in the plot")
      ->check(CLI::Range(1, 6));
  if (int rc = parse(app, argc, argv); rc >= 0) return rc;
  sweep::SweepState state;
  try {
    state = sweep::load_state(dir);
  } catch (const Error& e) {
    std::cerr << "tern sweep report: " << e.message() << "\n";
    return 2;
  }
  std::cout << "sweep " << state.sweep_file << " (" << state.objective.metric << ", "
            << (state.objective.mode == sweep::Objective::Mode::kMax ? "max" : "min")
            << ", early stopping " << state.rule << ")\n"
            << sweep::results_table(state, static_cast<size_t>(std::max(0, top)));
  if (!plot.empty()) {
    sweep::write_sweep_plot(state, plot, curves);
    std::cout << "plot: " << plot << "\n";
  }
  return 0;
}

}  // namespace

int cmd_sweep(int argc, char** argv) {
  if (argc >= 2 && !std::strcmp(argv[1], "report")) return cmd_sweep_report(argc - 1, argv + 1);
  CLI::App app{
      "Run a hyperparameter sweep: every trial a `tern train` process, early stopping across "
      "trials, results.csv / results.json / best.toml and TensorBoard HParams in the sweep "
      "folder (docs/sweeps.md). `tern sweep report DIR` prints the table again.",
      "tern sweep"};
  init_app(app);
  std::string file;
  sweep::RunOptions options;
  int parallel = 0;
  bool plain = false;
  app.add_option("sweep", file, "sweep file (TOML), e.g. examples/fashion_mnist_sweep.toml")
      ->required();
  app.add_option("--parallel", parallel, "trials at once (default: the file's parallel.trials)")
      ->check(CLI::Range(1, 4096));
  app.add_flag("--resume", options.resume,
               "continue the sweep in the folder: keep finished trials, restart the others");
  app.add_option("--out", options.out_dir,
                 "sweep folder (default: the file's `out`, else "
                 "runs/sweeps/<file name>)");
  app.add_flag("--plain", plain, "plain progress lines even on a terminal");
  if (int rc = parse(app, argc, argv); rc >= 0) return rc;

  sweep::SweepSpec spec;
  try {
    spec = sweep::load_sweep(file);
    if (parallel > 0) spec.parallel = parallel;
  } catch (const Error& e) {
    std::cerr << "tern sweep: " << e.message() << "\n";
    return 2;
  }
  options.tern_binary = self_binary();
  options.terminal = !plain && isatty(STDOUT_FILENO);
  sweep::SweepState state;
  try {
    state = sweep::run_sweep(spec, options);
  } catch (const Error& e) {
    // Validation (before any trial) and a folder that holds another sweep: usage errors.
    const ErrorCode c = e.code();
    std::cerr << "tern sweep: " << e.message() << "\n";
    return c == ErrorCode::kInvalidArgument || c == ErrorCode::kNotFound ||
                   c == ErrorCode::kFailedPrecondition
               ? 2
               : 1;
  }
  for (const auto& t : state.trials) {
    if (t.status == sweep::TrialStatus::kDone || t.status == sweep::TrialStatus::kStopped) return 0;
  }
  std::cerr << "tern sweep: no trial finished\n";
  return 1;
}

}  // namespace tern::tools
