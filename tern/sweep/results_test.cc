// Results: ranking, results.csv / results.json, best.toml (loads as a config with the best
// trial's keys), and the state file round trip (NaN kept as null).
#include "tern/sweep/results.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "tern/config/config.h"
#include "tern/io/atomic_file.h"

namespace tern::sweep {
namespace {

TrialRecord trial(int id, TrialStatus status, std::vector<double> values, double lr) {
  TrialRecord t{.id = id, .name = "trial_00" + std::to_string(id), .status = status};
  t.overrides = {{"optimizer.learning_rate", number_param(lr)}};
  t.sets = {"optimizer.learning_rate=" + number_param(lr).toml, "training.epochs=3",
            "training.threads=1", "output.dir=\"/x\"", "callbacks.csv_logger.append=true"};
  for (size_t e = 0; e < values.size(); ++e) {
    t.history.push_back(
        {.epoch = static_cast<int64_t>(e + 1), .values = {{"val_accuracy", values[e]}}});
  }
  t.wall_seconds = 1.5;
  t.attempts = 1;
  return t;
}

SweepState state(const std::string& base) {
  SweepState s;
  s.sweep_file = "s.toml";
  s.base_config = base;
  s.objective = {.metric = "val_accuracy"};
  s.rule = "asha";
  s.epochs = 3;
  s.hparams = {"optimizer.learning_rate"};
  s.trials = {trial(0, TrialStatus::kDone, {0.7, 0.8, 0.82}, 0.001),
              trial(1, TrialStatus::kStopped, {0.1}, 1e-6),
              trial(2, TrialStatus::kDone, {0.75, 0.85, 0.84}, 0.003),
              trial(3, TrialStatus::kFailed, {}, 10),
              trial(4, TrialStatus::kStopped, {std::nan("")}, 5)};
  s.trials[2].test_metrics = {{"test_accuracy", 0.83}};
  return s;
}

TEST(Results, RanksDoneTrialsByTheirFinalValue) {
  SweepState s = state("b.toml");
  std::vector<const TrialRecord*> r = rank_trials(s);
  ASSERT_EQ(r.size(), 5u);
  EXPECT_EQ(r[0]->id, 2);  // final 0.84 (its best, 0.85, is not what ranks)
  EXPECT_EQ(r[1]->id, 0);
  EXPECT_EQ(r[2]->id, 1);  // stopped
  EXPECT_EQ(r[3]->id, 4);  // stopped, NaN
  EXPECT_EQ(r[4]->id, 3);  // failed
  EXPECT_DOUBLE_EQ(s.trials[2].best_metric(s.objective), 0.85);
  const std::string table = results_table(s, 2);
  EXPECT_NE(table.find("learning_rate"), std::string::npos) << table;
  EXPECT_NE(table.find("1     trial_002  done"), std::string::npos) << table;
  EXPECT_EQ(table.find("trial_001"), std::string::npos) << table;  // only the top 2
  EXPECT_EQ(short_key("data.transforms[2].max_delta"), "max_delta");
}

TEST(Results, FilesAndBestConfig) {
  const std::string dir = ::testing::TempDir() + "/tern_sweep_results";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string base = dir + "/base.toml";
  std::ofstream(base) << "[model]\nname = \"mlp\"\n[optimizer]\nlearning_rate = 0.1\n"
                         "[training]\nepochs = 9\nthreads = 2\n";
  SweepState s = state(base);
  write_results(dir, s);
  std::string csv = io::read_file(dir + "/results.csv");
  EXPECT_EQ(csv.substr(0, csv.find('\n')),
            "rank,trial,status,optimizer.learning_rate,final_val_accuracy,best_val_accuracy,"
            "test_accuracy,epochs,wall_seconds,start_time,end_time,attempts,reason");
  EXPECT_NE(csv.find("\n1,trial_002,done,0.003,0.84,0.85,0.83,3,1.500,"), std::string::npos) << csv;
  EXPECT_NE(csv.find("\n5,trial_003,failed,10.0,nan,nan,,0,"), std::string::npos) << csv;
  nlohmann::json j = nlohmann::json::parse(io::read_file(dir + "/results.json"));
  EXPECT_EQ(j["trials"].size(), 5u);
  EXPECT_EQ(j["total_epochs"], 3 + 1 + 3 + 0 + 1);
  EXPECT_EQ(j["trials"][0]["overrides"]["optimizer.learning_rate"], 0.003);
  EXPECT_TRUE(j["trials"][4]["final_metric"].is_null());

  const std::string best = write_best_config(dir, s);
  ASSERT_EQ(best, dir + "/best.toml");
  config::TrainConfig cfg = config::load_config(best);
  EXPECT_DOUBLE_EQ(cfg.optimizer.learning_rate, 0.003);
  EXPECT_EQ(cfg.training.fit.epochs, 3);
  EXPECT_EQ(cfg.training.threads, 2);  // the base's: threads per trial are the sweep's business
  EXPECT_EQ(cfg.output.dir, dir + "/best");
  EXPECT_FALSE(cfg.callbacks.csv_logger.has_value());
  EXPECT_NE(io::read_file(best).find("# tern sweep: the best trial (trial_002, done)"),
            std::string::npos);

  // The state file keeps everything, NaN included.
  save_state(dir, s);
  SweepState back = load_state(dir);
  ASSERT_EQ(back.trials.size(), 5u);
  EXPECT_EQ(back.trials[2].overrides, s.trials[2].overrides);
  EXPECT_EQ(back.trials[2].sets, s.trials[2].sets);
  EXPECT_EQ(back.trials[1].status, TrialStatus::kStopped);
  EXPECT_TRUE(std::isnan(back.trials[4].history[0].values.at("val_accuracy")));
  EXPECT_DOUBLE_EQ(back.trials[2].test_metrics.at("test_accuracy"), 0.83);
  EXPECT_EQ(back.hparams, s.hparams);
}

}  // namespace
}  // namespace tern::sweep
