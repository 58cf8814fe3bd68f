// Trials: grid order, seeded random samples in their ranges, the budget's cap, each --set list.
#include "tern/sweep/trials.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>

namespace tern::sweep {
namespace {

SweepSpec grid_spec() {
  SweepSpec s;
  s.search.grid = {{"a", {number_param(1), number_param(2), number_param(3)}},
                   {"b", {{"true", true}, {"false", false}}}};
  return s;
}

TEST(Trials, GridIsTheProductWithTheLastKeyFastest) {
  std::vector<TrialSpec> t = expand_trials(grid_spec());
  ASSERT_EQ(t.size(), 6u);
  EXPECT_EQ(t[0].overrides[0].value.toml, "1.0");
  EXPECT_EQ(t[0].overrides[1].value.toml, "true");
  EXPECT_EQ(t[1].overrides[0].value.toml, "1.0");
  EXPECT_EQ(t[1].overrides[1].value.toml, "false");
  EXPECT_EQ(t[5].overrides[0].value.toml, "3.0");
  EXPECT_EQ(t[5].overrides[1].value.toml, "false");
  for (int i = 0; i < 6; ++i) EXPECT_EQ(t[static_cast<size_t>(i)].id, i);
  SweepSpec capped = grid_spec();
  capped.budget.max_trials = 4;
  EXPECT_EQ(expand_trials(capped).size(), 4u);
}

TEST(Trials, RandomSamplesAreSeededAndInRange) {
  SweepSpec s;
  s.search.method = SearchSpace::Method::kRandom;
  s.search.random_trials = 200;
  s.search.seed = 11;
  s.search.random = {
      {.key = "lr", .distribution = Distribution::kLogUniform, .low = 1e-4, .high = 1e-1},
      {.key = "wd", .distribution = Distribution::kUniform, .low = 0, .high = 0.5},
      {.key = "opt",
       .distribution = Distribution::kChoice,
       .choices = {{"'adam'", std::string("adam")}, {"'sgd'", std::string("sgd")}}}};
  std::vector<TrialSpec> a = expand_trials(s), b = expand_trials(s);
  ASSERT_EQ(a.size(), 200u);
  int below_1e3 = 0;
  std::set<std::string> opts;
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].overrides, b[i].overrides);
    const double lr = std::get<double>(a[i].overrides[0].value.value);
    const double wd = std::get<double>(a[i].overrides[1].value.value);
    EXPECT_GE(lr, 1e-4);
    EXPECT_LE(lr, 1e-1);
    EXPECT_GE(wd, 0);
    EXPECT_LE(wd, 0.5);
    below_1e3 += lr < 1e-3;
    opts.insert(format_param(a[i].overrides[2].value));
  }
  // Log-uniform: a third of the samples in each decade (uniform would put 0.9% below 1e-3).
  EXPECT_GT(below_1e3, 40);
  EXPECT_LT(below_1e3, 95);
  EXPECT_EQ(opts, (std::set<std::string>{"adam", "sgd"}));
  s.search.seed = 12;
  EXPECT_NE(expand_trials(s)[0].overrides, a[0].overrides);
}

TEST(Trials, OverridesPutEveryOutputInTheTrialFolder) {
  SweepSpec s = grid_spec();
  s.fixed = {{"training.steps_per_epoch", {"5", 5.0}}};
  TrialSpec t = expand_trials(s)[1];
  TrialEnv env{.dir = "/sw/trials/trial_001",
               .threads = 2,
               .epochs = 3,
               .base_keys = {{"callbacks.tensorboard.log_dir", "'x'"}}};
  std::vector<std::string> sets = trial_overrides(s, t, env);
  const std::vector<std::string> expected = {
      "training.epochs=3",
      "training.steps_per_epoch=5",
      "a=1.0",
      "b=false",
      "training.threads=2",
      "output.dir=\"/sw/trials/trial_001\"",
      "callbacks.csv_logger.path=\"/sw/trials/trial_001/training.csv\"",
      "callbacks.csv_logger.append=true",
      "callbacks.checkpoint.dir=\"/sw/trials/trial_001/checkpoints\"",
      "callbacks.checkpoint.save_freq=\"epoch\"",
      "callbacks.checkpoint.keep_last=1",
      "callbacks.tensorboard.log_dir=\"/sw/trials/trial_001/logs\""};
  EXPECT_EQ(sets, expected);
  EXPECT_EQ(trial_name(7), "trial_007");
  EXPECT_EQ(toml_string("a\"b\\c"), "\"a\\\"b\\\\c\"");
}

TEST(Trials, LaunchOrderIsASeededShuffleWhenAsked) {
  SweepSpec s = grid_spec();
  EXPECT_EQ(launch_order(s, 5), (std::vector<int>{0, 1, 2, 3, 4}));
  s.shuffled_order = true;
  std::vector<int> a = launch_order(s, 27);
  EXPECT_EQ(a, launch_order(s, 27));
  EXPECT_NE(a, launch_order(grid_spec(), 27));
  std::vector<int> sorted = a;
  std::sort(sorted.begin(), sorted.end());
  for (int i = 0; i < 27; ++i) EXPECT_EQ(sorted[static_cast<size_t>(i)], i);
}

}  // namespace
}  // namespace tern::sweep
