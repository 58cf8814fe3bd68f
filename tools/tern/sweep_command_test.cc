// `tern sweep` end to end: the built `tern` binary runs small sweeps on Fashion-MNIST (a tiny
// MLP, a few hundred steps per epoch, 1 thread per trial): trials in parallel, results and
// best.toml, a trial killed with SIGKILL, the whole sweep killed and resumed, ASHA and the median
// rule stopping bad learning rates, bad sweep files, and the mpirun and Slurm launchers.
#include <gtest/gtest.h>

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "tern/data/image_codec.h"
#include "tern/io/atomic_file.h"
#include "tern/io/hparams_plugin.h"
#include "tests/support/child_process.h"
#include "tools/tern/sweep_test_util.h"

namespace tern::tools {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using ::tern::testing::read_log;
using ::tern::testing::spawn_logged;
using ::tern::testing::wait_bounded;

constexpr auto kLimit = std::chrono::seconds(150);

class SweepCommand : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists(std::string(kFashionMnistDir) + "/train-images-idx3-ubyte.gz"))
      GTEST_SKIP() << "Fashion-MNIST not installed (Debian's dataset-fashion-mnist)";
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::path(::testing::TempDir() + "/tern_sweep_cli/" + info->name()).lexically_normal();
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    write_base_config(dir_ + "/base.toml", dir_ + "/unused");
  }

  // `tern ARGS...` with its output in <dir>/<log>; the exit code.
  int tern(const std::vector<std::string>& args, const std::string& log,
           const std::vector<std::string>& env = {}) {
    std::vector<std::string> argv = {TERN_TOOL_PATH};
    argv.insert(argv.end(), args.begin(), args.end());
    pid_t pid = spawn_logged(argv, env, dir_ + "/" + log);
    return wait_bounded(pid, kLimit);
  }
  json results(const std::string& out) { return json::parse(io::read_file(out + "/results.json")); }
  json trial(const json& r, const std::string& name) {
    for (const auto& t : r["trials"]) {
      if (t["trial"] == name) return t;
    }
    ADD_FAILURE() << "no " << name;
    return json();
  }

  std::string dir_;
};

// The largest overlap in time between two trials (seconds).
double max_overlap(const json& r) {
  double best = 0;
  for (const auto& a : r["trials"]) {
    for (const auto& b : r["trials"]) {
      if (a["trial"] == b["trial"]) continue;
      const double o = std::min(a["end_time"].get<double>(), b["end_time"].get<double>()) -
                       std::max(a["start_time"].get<double>(), b["start_time"].get<double>());
      best = std::max(best, o);
    }
  }
  return best;
}

TEST_F(SweepCommand, GridRunsTrialsInParallelAndBestTomlTrainsToTheReportedMetric) {
  write_sweep(dir_ + "/s.toml",
              "[grid]\n\"optimizer.learning_rate\" = [0.003, 0.01]\n"
              "\"optimizer.weight_decay\" = [0.0, 0.001]\n[budget]\nmax_epochs = 2\n"
              "[set]\n\"training.steps_per_epoch\" = 100\n");
  const std::string out = dir_ + "/out";
  ASSERT_EQ(tern({"sweep", dir_ + "/s.toml", "--parallel", "2", "--out", out}, "sweep.log"), 0)
      << read_log(dir_ + "/sweep.log");
  const std::string log = read_log(dir_ + "/sweep.log");
  EXPECT_NE(log.find("4 trials"), std::string::npos) << log;
  EXPECT_NE(log.find("2 at once, 1 thread each"), std::string::npos) << log;  // 2 cores / 2
  json r = results(out);
  ASSERT_EQ(r["trials"].size(), 4u);
  for (const auto& t : r["trials"]) {
    EXPECT_EQ(t["status"], "done") << t;
    EXPECT_EQ(t["epochs"], 2) << t;
    EXPECT_GT(t["final_metric"].get<double>(), 0.5) << t;
  }
  EXPECT_GT(max_overlap(r), 0.2) << r.dump(1);  // two trials ran at the same time

  // results.csv: a header and one row per trial.
  std::istringstream csv(io::read_file(out + "/results.csv"));
  std::string line;
  std::vector<std::string> lines;
  while (std::getline(csv, line)) lines.push_back(line);
  ASSERT_EQ(lines.size(), 5u);
  EXPECT_EQ(lines[0].substr(0, 70),
            "rank,trial,status,optimizer.learning_rate,optimizer.weight_decay,final");
  for (int i = 0; i < 4; ++i) {
    const std::string name = "trial_00" + std::to_string(i);
    EXPECT_EQ(
        std::count_if(lines.begin(), lines.end(),
                      [&](const std::string& l) { return l.find(name) != std::string::npos; }),
        1);
  }

  // best.toml trains (same threads as the trial) to exactly the reported final metric.
  const json best = r["trials"][0];
  ASSERT_EQ(tern({"train", out + "/best.toml", "--quiet", "--set", "training.threads=1", "--set",
                  "callbacks.csv_logger.path=\"" + dir_ + "/best.csv\""},
                 "best.log"),
            0)
      << read_log(dir_ + "/best.log");
  std::istringstream best_csv(io::read_file(dir_ + "/best.csv"));
  std::string header, row, last;
  std::getline(best_csv, header);
  while (std::getline(best_csv, row)) last = row;
  const auto cols = split_csv(header), cells = split_csv(last);
  const size_t col = std::find(cols.begin(), cols.end(), "val_accuracy") - cols.begin();
  ASSERT_LT(col, cells.size()) << header;
  EXPECT_NEAR(std::stod(cells[col]), best["final_metric"].get<double>(), 1e-9);

  // The report and its plot.
  ASSERT_EQ(tern({"sweep", "report", out, "--plot", dir_ + "/plot.png"}, "report.log"), 0);
  const std::string report = read_log(dir_ + "/report.log");
  EXPECT_NE(report.find("1     " + best["trial"].get<std::string>()), std::string::npos) << report;
  Tensor png = data::read_image_file(dir_ + "/plot.png");
  EXPECT_EQ(png.shape(), (Shape{280, 3 * 380, 3}));

  // TensorBoard HParams: the experiment, and a session per trial.
  io::HParamsRecord exp = io::read_hparams_events(events_in(out));
  ASSERT_TRUE(exp.has_experiment);
  ASSERT_EQ(exp.hparams.size(), 2u);
  EXPECT_EQ(exp.hparams[1].name, "optimizer.weight_decay");
  io::HParamsRecord session = io::read_hparams_events(events_in(out + "/trials/trial_003"));
  ASSERT_TRUE(session.has_session_end);
  EXPECT_EQ(session.session.status, io::HParamsSession::Status::kSuccess);
  EXPECT_EQ(std::get<double>(session.session.hparams.at("optimizer.learning_rate")), 0.01);
  EXPECT_TRUE(std::any_of(session.session.metrics.begin(), session.session.metrics.end(),
                          [](const auto& m) { return std::get<0>(m) == "val_accuracy"; }));

  // Again: refused without --resume; with it, nothing runs.
  EXPECT_EQ(tern({"sweep", dir_ + "/s.toml", "--out", out}, "again.log"), 2);
  EXPECT_NE(read_log(dir_ + "/again.log").find("holds a sweep already"), std::string::npos);
  ASSERT_EQ(tern({"sweep", dir_ + "/s.toml", "--out", out, "--resume"}, "resume.log"), 0);
  EXPECT_NE(read_log(dir_ + "/resume.log").find("4 finished trials kept"), std::string::npos);
  for (const auto& t : results(out)["trials"]) EXPECT_EQ(t["attempts"], 1) << t;
}

TEST_F(SweepCommand, TrialKilledWithSigkillIsFailedWhileTheOthersFinish) {
  write_sweep(
      dir_ + "/s.toml",
      "[grid]\n\"optimizer.learning_rate\" = [0.003, 0.01, 0.001]\n[budget]\n"
      "max_epochs = 3\n[parallel]\ntrials = 2\n[set]\n\"training.steps_per_epoch\" = 300\n");
  const std::string out = dir_ + "/out";
  pid_t sweep = spawn_logged({TERN_TOOL_PATH, "sweep", dir_ + "/s.toml", "--out", out}, {},
                             dir_ + "/sweep.log");
  const pid_t victim = wait_for_trial_process(out + "/trials/trial_000", std::chrono::seconds(60));
  ASSERT_GT(victim, 0) << read_log(dir_ + "/sweep.log");
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  ASSERT_EQ(::kill(victim, SIGKILL), 0);
  ASSERT_EQ(wait_bounded(sweep, kLimit), 0) << read_log(dir_ + "/sweep.log");
  json r = results(out);
  json killed = trial(r, "trial_000");
  EXPECT_EQ(killed["status"], "failed");
  EXPECT_NE(killed["reason"].get<std::string>().find("signal 9"), std::string::npos) << killed;
  for (const char* name : {"trial_001", "trial_002"}) {
    EXPECT_EQ(trial(r, name)["status"], "done") << r.dump(1);
    EXPECT_EQ(trial(r, name)["epochs"], 3);
  }
  EXPECT_EQ(r["trials"][2]["trial"], "trial_000");  // failed trials rank last
}

TEST_F(SweepCommand, ResumeAfterKillingTheSweepRepeatsNoFinishedTrial) {
  write_sweep(dir_ + "/s.toml",
              "[grid]\n\"optimizer.learning_rate\" = [0.003, 0.01, 0.001]\n[budget]\n"
              "max_epochs = 3\n[set]\n\"training.steps_per_epoch\" = 400\n");
  const std::string out = dir_ + "/out";
  pid_t sweep = spawn_logged({TERN_TOOL_PATH, "sweep", dir_ + "/s.toml", "--out", out}, {},
                             dir_ + "/sweep.log");
  // Kill the sweep once trial_000 is done and trial_001 has a checkpointed epoch.
  json before;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(90);
  for (;;) {
    ASSERT_LT(std::chrono::steady_clock::now(), deadline) << read_log(dir_ + "/sweep.log");
    try {
      before = json::parse(io::read_file(out + "/sweep_state.json"));
    } catch (const std::exception&) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      continue;
    }
    if (before["trials"][0]["status"] == "done" && !before["trials"][1]["history"].empty()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_EQ(::kill(sweep, SIGKILL), 0);
  wait_bounded(sweep, kLimit);
  ASSERT_EQ(before["trials"][1]["status"], "running") << before["trials"][1];
  // The running trial died with the sweep.
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  EXPECT_EQ(wait_for_trial_process(out + "/trials/trial_001", std::chrono::seconds(0)), -1);

  ASSERT_EQ(tern({"sweep", dir_ + "/s.toml", "--out", out, "--resume"}, "resume.log"), 0)
      << read_log(dir_ + "/resume.log");
  EXPECT_NE(read_log(dir_ + "/resume.log").find("1 finished trials kept, 1 interrupted"),
            std::string::npos)
      << read_log(dir_ + "/resume.log");
  json after = json::parse(io::read_file(out + "/sweep_state.json"));
  for (const auto& t : after["trials"]) {
    EXPECT_EQ(t["status"], "done") << t["name"];
    EXPECT_EQ(t["history"].size(), 3u) << t["name"];
  }
  EXPECT_EQ(after["trials"][0]["attempts"], 1);  // finished before the kill: not run again
  EXPECT_EQ(after["trials"][0]["start_time"], before["trials"][0]["start_time"]);
  EXPECT_EQ(after["trials"][1]["attempts"], 2);
  EXPECT_EQ(after["trials"][2]["attempts"], 1);
  // trial_001 continued from its checkpoint.
  EXPECT_NE(read_log(out + "/trials/trial_001/train.log").find("resuming from"), std::string::npos);
}

// 500 epochs take ~18 s: the 2 s budget stops the first trial long before (50 epochs, the first
// form, finished in 1.8 s on a faster host and the trial ended "done").
TEST_F(SweepCommand, TimeBudgetStopsRunningTrialsAndStartsNoMore) {
  write_sweep(dir_ + "/s.toml",
              "[grid]\n\"optimizer.learning_rate\" = [0.003, 0.01]\n[budget]\nmax_epochs = 500\n"
              "max_time = 2\n[set]\n\"training.steps_per_epoch\" = 300\n");
  ASSERT_EQ(tern({"sweep", dir_ + "/s.toml", "--out", dir_ + "/out"}, "sweep.log"), 0)
      << read_log(dir_ + "/sweep.log");
  EXPECT_NE(read_log(dir_ + "/sweep.log").find("the time budget (2s) is spent"), std::string::npos);
  json r = results(dir_ + "/out");
  json first = trial(r, "trial_000"), second = trial(r, "trial_001");
  EXPECT_EQ(first["status"], "stopped") << first;
  EXPECT_EQ(first["reason"], "time budget");
  EXPECT_LT(first["epochs"].get<int>(), 500);
  EXPECT_EQ(second["status"], "pending") << second;  // --resume would run it
  EXPECT_LT(first["wall_seconds"].get<double>(), 10);
}

// 1e-6 learns nothing in 4 epochs and 10 diverges: both are stopped after their first epoch.
void expect_bad_rates_stopped(const json& r, const std::string& rule) {
  int64_t epochs = 0;
  for (const auto& t : r["trials"]) epochs += t["epochs"].get<int64_t>();
  const json good = r["trials"][0];
  EXPECT_EQ(good["trial"], "trial_000");
  EXPECT_EQ(good["status"], "done");
  EXPECT_EQ(good["epochs"], 4);
  for (const auto& t : r["trials"]) {
    if (t["trial"] == "trial_000") continue;
    EXPECT_EQ(t["status"], "stopped") << t;
    EXPECT_LT(t["epochs"].get<int64_t>(), 4) << t;
    EXPECT_NE(t["reason"].get<std::string>().find(rule), std::string::npos) << t;
  }
  EXPECT_LE(epochs, 4 + 2 + 2);  // the full grid: 12
  EXPECT_EQ(r["total_epochs"], epochs);
}

TEST_F(SweepCommand, AshaStopsClearlyBadLearningRatesEarly) {
  write_sweep(dir_ + "/s.toml",
              "order = \"file\"\n"  // the good trial first: the rules compare with it
              "[grid]\n\"optimizer.learning_rate\" = [0.003, 1e-6, 10.0]\n[budget]\n"
              "max_epochs = 4\n[early_stopping]\nrule = \"asha\"\nreduction_factor = 2\n"
              "min_epochs = 1\n[set]\n\"training.steps_per_epoch\" = 300\n");
  ASSERT_EQ(tern({"sweep", dir_ + "/s.toml", "--out", dir_ + "/out"}, "sweep.log"), 0)
      << read_log(dir_ + "/sweep.log");
  expect_bad_rates_stopped(results(dir_ + "/out"), "asha rung 1");
}

TEST_F(SweepCommand, MedianRuleStopsClearlyBadLearningRatesEarly) {
  write_sweep(dir_ + "/s.toml",
              "order = \"file\"\n"  // the good trial first: the rules compare with it
              "[grid]\n\"optimizer.learning_rate\" = [0.003, 1e-6, 10.0]\n[budget]\n"
              "max_epochs = 4\n[early_stopping]\nrule = \"median\"\ngrace_epochs = 1\n"
              "min_trials = 1\n[set]\n\"training.steps_per_epoch\" = 300\n");
  ASSERT_EQ(tern({"sweep", dir_ + "/s.toml", "--out", dir_ + "/out"}, "sweep.log"), 0)
      << read_log(dir_ + "/sweep.log");
  expect_bad_rates_stopped(results(dir_ + "/out"), "median rule at epoch 1");
}

TEST_F(SweepCommand, BadSweepFilesExitTwoNamingTheProblem) {
  const std::string grid = "[grid]\n\"optimizer.learning_rate\" = [0.001, 0.01]\n";
  struct Case {
    std::string text;
    std::vector<std::string> flags;
    std::string message;
  } cases[] = {
      {grid + "[objectve]\nmetric = \"loss\"\n",
       {},
       "unknown key 'objectve' (did you mean 'objective'?)"},
      {"[grid]\n\"optimizer.learning_rat\" = [0.1]\n",
       {},
       "unknown key 'optimizer.learning_rat' (did you mean 'optimizer.learning_rate'?)"},
      {"[grid]\n\"training.batch_size\" = [\"big\"]\n",
       {},
       "key 'training.batch_size' must be an integer"},
      {"[grid]\n\"optimizer.learning_rate\" = []\n", {}, "empty list of values"},
      {"[random]\ntrials = 0\n[random.params]\n\"optimizer.learning_rate\" = {uniform = [0, 1]}\n",
       {},
       "key 'random.trials' must be >= 1"},
      {grid, {"--parallel", "3"}, "parallel 3 is more than the 2 trials of the sweep"},
      {grid + "[objective]\nmetric = \"val_f1\"\n", {}, "objective.metric 'val_f1' is not logged"},
      {grid + "[parallel]\ntrials = \"all\"\n", {}, "key 'parallel.trials' must be an integer"},
  };
  int i = 0;
  for (const Case& c : cases) {
    const std::string file = dir_ + "/bad" + std::to_string(i) + ".toml";
    write_sweep(file, c.text);
    std::vector<std::string> args = {"sweep", file, "--out", dir_ + "/out"};
    args.insert(args.end(), c.flags.begin(), c.flags.end());
    const std::string log = "bad" + std::to_string(i++) + ".log";
    EXPECT_EQ(tern(args, log), 2) << c.message;
    EXPECT_NE(read_log(dir_ + "/" + log).find(c.message), std::string::npos)
        << read_log(dir_ + "/" + log);
  }
  EXPECT_FALSE(fs::exists(dir_ + "/out"));  // nothing started
  std::ofstream(dir_ + "/nobase.toml") << "base = \"missing.toml\"\n" << grid;
  EXPECT_EQ(tern({"sweep", dir_ + "/nobase.toml"}, "nobase.log"), 2);
  EXPECT_NE(read_log(dir_ + "/nobase.log").find("missing.toml' does not exist"), std::string::npos);
  EXPECT_EQ(tern({"sweep", "report", dir_ + "/nothing"}, "report.log"), 2);
}

TEST_F(SweepCommand, MpirunLauncherPlacesTrialsOnTheHostList) {
  std::string out_text;
  if (std::system("command -v mpirun > /dev/null") != 0) GTEST_SKIP() << "no mpirun";
  write_sweep(
      dir_ + "/s.toml",
      "[grid]\n\"optimizer.learning_rate\" = [0.003, 0.01]\n[budget]\nmax_epochs = 1\n"
      "[parallel]\ntrials = 2\n[launcher]\nkind = \"mpirun\"\nhosts = [\"localhost:2\"]\n"
      "mpirun_args = [\"--bind-to\", \"none\"]\n[set]\n\"training.steps_per_epoch\" = 50\n");
  ASSERT_EQ(tern({"sweep", dir_ + "/s.toml", "--out", dir_ + "/out"}, "sweep.log"), 0)
      << read_log(dir_ + "/sweep.log");
  for (const auto& t : results(dir_ + "/out")["trials"]) EXPECT_EQ(t["status"], "done") << t;
  EXPECT_EQ(read_log(dir_ + "/out/trials/trial_001/command.txt")
                .rfind("mpirun -np 1 --host localhost", 0),
            0u);
}

TEST_F(SweepCommand, SlurmLauncherRunsTheTrialsAsAJobArray) {
  LocalSlurm slurm(dir_ + "/slurm");
  if (!slurm.skip_reason().empty()) GTEST_SKIP() << slurm.skip_reason();
  write_sweep(dir_ + "/s.toml",
              "[grid]\n\"optimizer.learning_rate\" = [0.003, 0.01]\n[budget]\nmax_epochs = 2\n"
              "[parallel]\ntrials = 2\n[launcher]\nkind = \"slurm\"\n"
              "sbatch_args = [\"--time=00:05:00\"]\n[set]\n\"training.steps_per_epoch\" = 200\n");
  ASSERT_EQ(tern({"sweep", dir_ + "/s.toml", "--out", dir_ + "/out"}, "sweep.log",
                 {"SLURM_CONF=" + slurm.conf()}),
            0)
      << read_log(dir_ + "/sweep.log") << slurm.logs();
  json r = results(dir_ + "/out");
  for (const auto& t : r["trials"]) {
    EXPECT_EQ(t["status"], "done") << t;
    EXPECT_EQ(t["epochs"], 2) << t;
    // The span from the task script's own start: a task first seen finished (a busy machine
    // between two polls) kept a span of 0 s, and the overlap below failed.
    EXPECT_GT(t["wall_seconds"].get<double>(), 0.0) << t;
  }
  EXPECT_GT(max_overlap(r), 0.0) << r.dump(1);
  EXPECT_NE(read_log(dir_ + "/out/slurm/array_0.sh").find("#SBATCH --array=0,1%2"),
            std::string::npos);
  EXPECT_EQ(read_log(dir_ + "/out/trials/trial_000/exit_code"), "0\n");
  EXPECT_NE(read_log(dir_ + "/sweep.log").find("(slurm "), std::string::npos);  // job refs
}

}  // namespace
}  // namespace tern::tools
