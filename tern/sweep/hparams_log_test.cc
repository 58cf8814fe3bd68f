// The sweep's HParams files read back with io::read_hparams_events.
#include "tern/sweep/hparams_log.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "tern/io/hparams_plugin.h"

namespace tern::sweep {
namespace {

std::string events_file(const std::string& dir) {
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().filename().string().rfind("events.out.tfevents.", 0) == 0)
      return e.path().string();
  }
  return "";
}

TEST(HParamsLog, ExperimentAndSessions) {
  const std::string dir = ::testing::TempDir() + "/tern_sweep_hparams";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir + "/trials/trial_001");
  std::ofstream(dir + "/base.toml") << "[model]\nname = \"mlp\"\n[data]\nvalidation_split = 0.1\n";
  SweepSpec spec;
  spec.base_config = dir + "/base.toml";
  spec.search.grid = {{"optimizer.learning_rate", {number_param(0.001), number_param(0.01)}},
                      {"optimizer.name", {{"'adam'", std::string("adam")}}}};
  SweepState state;
  state.start_time = 1700000000;
  write_hparams_experiment(dir, spec, state);
  const std::string experiment = events_file(dir);
  ASSERT_FALSE(experiment.empty());
  write_hparams_experiment(dir, spec, state);  // a resumed sweep keeps the first
  int files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    files += e.is_regular_file() && e.path().filename().string().rfind("events", 0) == 0;
  EXPECT_EQ(files, 1);
  io::HParamsRecord r = io::read_hparams_events(experiment);
  ASSERT_TRUE(r.has_experiment);
  ASSERT_EQ(r.hparams.size(), 2u);
  EXPECT_EQ(r.hparams[0].name, "optimizer.learning_rate");
  EXPECT_EQ(r.hparams[0].discrete_numbers, (std::vector<double>{0.001, 0.01}));
  EXPECT_EQ(r.hparams[1].type, io::HParamInfo::Type::kString);
  std::vector<std::string> tags;
  for (const auto& m : r.metrics) tags.push_back(m.tag);
  EXPECT_EQ(tags, (std::vector<std::string>{"loss", "accuracy", "val_loss", "val_accuracy",
                                            "test_loss", "test_accuracy"}));

  TrialRecord t{.id = 1, .name = "trial_001", .status = TrialStatus::kStopped};
  t.overrides = {{"optimizer.learning_rate", number_param(0.01)},
                 {"optimizer.name", {"'adam'", std::string("adam")}}};
  t.history = {{1, {{"val_accuracy", 0.5}, {"loss", 1.5}}}, {2, {{"val_accuracy", std::nan("")}}}};
  t.start_time = 1700000001;
  t.end_time = 1700000009;
  write_hparams_session(dir, t);
  io::HParamsRecord s = io::read_hparams_events(events_file(dir + "/trials/trial_001"));
  ASSERT_TRUE(s.has_session_start);
  ASSERT_TRUE(s.has_session_end);
  EXPECT_EQ(std::get<double>(s.session.hparams.at("optimizer.learning_rate")), 0.01);
  EXPECT_EQ(std::get<std::string>(s.session.hparams.at("optimizer.name")), "adam");
  EXPECT_EQ(s.session.status, io::HParamsSession::Status::kSuccess);
  EXPECT_EQ(s.session.start_time_secs, 1700000001);
  // Two finite values of epoch 1; the NaN of epoch 2 is left out.
  ASSERT_EQ(s.session.metrics.size(), 2u);
  EXPECT_EQ(std::get<0>(s.session.metrics[1]), "val_accuracy");
  EXPECT_EQ(std::get<1>(s.session.metrics[1]), 1);
  EXPECT_FLOAT_EQ(static_cast<float>(std::get<2>(s.session.metrics[1])), 0.5f);
}

}  // namespace
}  // namespace tern::sweep
