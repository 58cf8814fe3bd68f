// Sweep files: every section read into SweepSpec, and bad files named by file, line and key.
#include "tern/sweep/sweep_spec.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "tests/support/random_tensor.h"

namespace tern::sweep {
namespace {

std::string write(const std::string& name, const std::string& text) {
  std::string dir = ::testing::TempDir() + "/tern_sweep_spec_test";
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/" + name) << text;
  return dir + "/" + name;
}

TEST(SweepSpec, ReadsEverySection) {
  SweepSpec s = load_sweep(write("full.toml", R"(
base = "base.toml"
out = "runs/x"
checkpoints = false
[grid]
"optimizer.learning_rate" = [1e-3, 0.01]
optimizer.name = ["adam", "adamw"]
"data.transforms[2].max_delta" = [0.0, 0.1]
[objective]
metric = "val_loss"
mode = "min"
[budget]
max_trials = 5
max_epochs = 3
max_time = "1h30m"
[parallel]
trials = 2
threads_per_trial = 1
[early_stopping]
rule = "asha"
reduction_factor = 2
min_epochs = 1
max_epochs = 8
[launcher]
kind = "slurm"
partition = "gpu"
sbatch_args = ["--time=00:10:00"]
[set]
"training.steps_per_epoch" = 20
model.args.units = [16, 8]
)"));
  EXPECT_EQ(s.base_config,
            std::filesystem::path(::testing::TempDir() + "/tern_sweep_spec_test/base.toml")
                .lexically_normal()
                .string());
  EXPECT_EQ(s.out_dir, "runs/x");
  EXPECT_FALSE(s.checkpoints);
  EXPECT_TRUE(s.shuffled_order);  // order "auto" with early stopping
  ASSERT_EQ(s.search.grid.size(), 3u);
  // In the file's order.
  EXPECT_EQ(s.search.grid[0].key, "optimizer.learning_rate");
  EXPECT_EQ(s.search.grid[0].values[0].toml, "0.001");
  EXPECT_EQ(std::get<double>(s.search.grid[0].values[1].value), 0.01);
  EXPECT_EQ(s.search.grid[1].key, "optimizer.name");
  EXPECT_EQ(s.search.grid[1].values[1].toml, "'adamw'");
  EXPECT_EQ(format_param(s.search.grid[1].values[1]), "adamw");
  EXPECT_EQ(s.search.grid[2].key, "data.transforms[2].max_delta");
  EXPECT_EQ(s.search.grid[2].values[0].toml, "0.0");
  EXPECT_EQ(s.objective.metric, "val_loss");
  EXPECT_EQ(s.objective.mode, Objective::Mode::kMin);
  EXPECT_TRUE(s.objective.better(0.1, 0.2));
  EXPECT_EQ(s.budget.max_trials, 5);
  EXPECT_EQ(s.budget.max_epochs, 3);
  EXPECT_DOUBLE_EQ(s.budget.max_seconds, 5400);
  EXPECT_EQ(s.parallel, 2);
  EXPECT_EQ(s.threads_per_trial, 1);
  EXPECT_EQ(s.early_stopping.rule, EarlyStoppingSpec::Rule::kAsha);
  EXPECT_EQ(s.early_stopping.reduction_factor, 2);
  EXPECT_EQ(s.early_stopping.max_epochs, 8);
  EXPECT_EQ(s.launcher.kind, LauncherSpec::Kind::kSlurm);
  EXPECT_EQ(s.launcher.partition, "gpu");
  EXPECT_EQ(s.launcher.sbatch_args, std::vector<std::string>{"--time=00:10:00"});
  ASSERT_EQ(s.fixed.size(), 2u);
  EXPECT_EQ(s.fixed[0].value.toml, "20");
  EXPECT_EQ(s.fixed[1].key, "model.args.units");
  EXPECT_EQ(s.fixed[1].value.toml, "[ 16, 8 ]");
}

TEST(SweepSpec, RandomSearch) {
  SweepSpec s = load_sweep(write("random.toml", R"(
base = "/abs/base.toml"
[random]
trials = 6
seed = 3
[random.params]
"optimizer.learning_rate" = {log_uniform = [1e-4, 1e-1]}
"optimizer.weight_decay" = {uniform = [0, 0.001]}
"model.args.dropout" = {choice = [0.0, 0.25]}
[early_stopping]
rule = "median"
grace_epochs = 2
min_trials = 3
)"));
  EXPECT_EQ(s.base_config, "/abs/base.toml");
  EXPECT_EQ(s.search.method, SearchSpace::Method::kRandom);
  EXPECT_EQ(s.search.random_trials, 6);
  EXPECT_EQ(s.search.seed, 3u);
  ASSERT_EQ(s.search.random.size(), 3u);
  EXPECT_EQ(s.search.random[0].distribution, Distribution::kLogUniform);
  EXPECT_EQ(s.search.random[0].low, 1e-4);
  EXPECT_EQ(s.search.random[1].distribution, Distribution::kUniform);
  EXPECT_EQ(s.search.random[2].distribution, Distribution::kChoice);
  EXPECT_EQ(s.early_stopping.rule, EarlyStoppingSpec::Rule::kMedian);
  EXPECT_EQ(s.early_stopping.grace_epochs, 2);
  EXPECT_EQ(s.early_stopping.min_trials, 3);
}

TEST(SweepSpec, BadFilesNameFileLineAndKey) {
  const std::string grid = "[grid]\n\"optimizer.learning_rate\" = [0.1]\n";
  struct Case {
    std::string text, message;
  } cases[] = {
      {"base = \"b.toml\"\n" + grid + "[objectve]\nmetric = \"loss\"\n",
       "bad.toml:4: unknown key 'objectve' (did you mean 'objective'?)"},
      {"base = \"b.toml\"\n" + grid + "[parallel]\ntrials = \"two\"\n",
       "bad.toml:5: key 'parallel.trials' must be an integer"},
      {"base = \"b.toml\"\n[grid]\n\"optimizer.learning_rate\" = []\n",
       "bad.toml:3: 'optimizer.learning_rate': empty list of values"},
      {"base = \"b.toml\"\n[grid]\n", "[grid] is empty"},
      {"base = \"b.toml\"\n[random]\ntrials = 0\n[random.params]\nx = {uniform = [0, 1]}\n",
       "key 'random.trials' must be >= 1"},
      {"base = \"b.toml\"\n", "give exactly one search space: [grid] or [random]"},
      {grid, "key 'base' (the training config) is required"},
      {"base = \"b.toml\"\n" + grid + "[early_stopping]\nrule = \"median\"\nreduction_factor = 2\n",
       "unknown key 'early_stopping.reduction_factor'"},
      {"base = \"b.toml\"\n" + grid + "[early_stopping]\nrule = \"hyperband\"\n",
       "'hyperband' is not one of none, median, asha"},
      {"base = \"b.toml\"\n" + grid + "[objective]\nmode = \"maximize\"\n",
       "'maximize' is not one of auto, max, min"},
      {"base = \"b.toml\"\n[random]\ntrials = 2\n[random.params]\nx = {log_uniform = [0, 1]}\n",
       "log_uniform needs low > 0"},
      {"base = \"b.toml\"\n" + grid + "[launcher]\nkind = \"mpirun\"\n", "needs 'launcher.hosts'"},
      {"base = \"b.toml\"\n" + grid + "[budget]\nmax_time = \"10 minutes\"\n",
       "key 'budget.max_time' must be seconds or a duration"},
      {"base = \"b.toml\"\n[grid\n", "TOML syntax error"},
  };
  for (const Case& c : cases) {
    EXPECT_TERN_ERROR(load_sweep(write("bad.toml", c.text)), ErrorCode::kInvalidArgument,
                      c.message);
  }
  EXPECT_TERN_ERROR(load_sweep("/nonexistent/sweep.toml"), ErrorCode::kNotFound,
                    "/nonexistent/sweep.toml");
}

TEST(SweepSpec, ModeAutoMinimizesLosses) {
  const std::string grid = "base = \"b.toml\"\n[grid]\n\"optimizer.learning_rate\" = [0.1]\n";
  EXPECT_EQ(load_sweep(write("auto1.toml", grid)).objective.mode, Objective::Mode::kMax);
  EXPECT_FALSE(load_sweep(write("auto1.toml", grid)).shuffled_order);  // no early stopping
  EXPECT_TRUE(load_sweep(write("order.toml", "order = \"shuffled\"\n" + grid)).shuffled_order);
  EXPECT_EQ(
      load_sweep(write("auto2.toml", grid + "[objective]\nmetric = \"val_loss\"\n")).objective.mode,
      Objective::Mode::kMin);
  EXPECT_EQ(
      load_sweep(write("auto3.toml", grid + "[objective]\nmetric = \"val_loss\"\nmode = \"max\"\n"))
          .objective.mode,
      Objective::Mode::kMax);
}

TEST(SweepSpec, NumbersKeepTheirTomlType) {
  EXPECT_EQ(number_param(0.001).toml, "0.001");
  EXPECT_EQ(number_param(3).toml, "3.0");  // a float, as the key expects
  EXPECT_EQ(number_param(1e-6).toml, "1e-06");
}

}  // namespace
}  // namespace tern::sweep
