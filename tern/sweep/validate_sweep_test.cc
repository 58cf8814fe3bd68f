// validate_sweep: every trial's --set list loaded through config::load_config before anything
// runs; the objective, parallelism and early-stopping epochs checked against the base config.
#include "tern/sweep/validate_sweep.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "tests/support/random_tensor.h"

namespace tern::sweep {
namespace {

class ValidateSweep : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "/tern_validate_sweep";
    std::filesystem::create_directories(dir_);
    std::ofstream(dir_ + "/base.toml")
        << "[model]\nname = \"mlp\"\n[data]\nvalidation_split = 0.1\n"
           "[optimizer]\nname = \"adamw\"\n[training]\nepochs = 4\n";
    std::ofstream(dir_ + "/noval.toml") << "[model]\nname = \"mlp\"\n";
  }
  SweepSpec spec(const std::string& grid_key, const std::string& values) {
    std::ofstream(dir_ + "/s.toml")
        << "base = \"base.toml\"\n[grid]\n\"" << grid_key << "\" = " << values << "\n";
    return load_sweep(dir_ + "/s.toml");
  }
  std::string dir_;
};

TEST_F(ValidateSweep, PlansThreadsAndEpochs) {
  SweepSpec s = spec("optimizer.learning_rate", "[0.001, 0.01, 0.1]");
  s.parallel = 2;
  SweepPlan p = validate_sweep(s, 4);
  EXPECT_EQ(p.trials.size(), 3u);
  EXPECT_EQ(p.threads_per_trial, 2);
  EXPECT_EQ(p.epochs, 4);
  s.budget.max_epochs = 2;
  s.parallel = 3;
  p = validate_sweep(s, 2);
  EXPECT_EQ(p.threads_per_trial, 1);
  EXPECT_EQ(p.epochs, 2);
}

TEST_F(ValidateSweep, BadOverridesAreNamedAsTernTrainNamesThem) {
  EXPECT_TERN_ERROR(validate_sweep(spec("optimizer.learning_rat", "[0.1]"), 2),
                    ErrorCode::kInvalidArgument, "s.toml: trial 0 (optimizer.learning_rat=0.1): ");
  EXPECT_TERN_ERROR(
      validate_sweep(spec("optimizer.learning_rat", "[0.1]"), 2), ErrorCode::kInvalidArgument,
      "unknown key 'optimizer.learning_rat' (did you mean 'optimizer.learning_rate'?)");
  EXPECT_TERN_ERROR(validate_sweep(spec("training.batch_size", "[\"big\"]"), 2),
                    ErrorCode::kInvalidArgument, "key 'training.batch_size' must be an integer");
  EXPECT_NO_THROW(validate_sweep(spec("training.epochs", "[1, 2]"), 2));
  SweepSpec epochs = spec("training.epochs", "[1, 2]");
  epochs.budget.max_epochs = 3;
  EXPECT_TERN_ERROR(validate_sweep(epochs, 2), ErrorCode::kInvalidArgument,
                    "'training.epochs' is set by the sweep itself (budget.max_epochs)");
  EXPECT_TERN_ERROR(validate_sweep(spec("optimizer.momentum", "[0.9]"), 2),
                    ErrorCode::kInvalidArgument, "does not apply to optimizer 'adamw'");
  EXPECT_TERN_ERROR(validate_sweep(spec("data.transforms[0].max_delta", "[0.1]"), 2),
                    ErrorCode::kInvalidArgument, "'data.transforms' in ");
}

TEST_F(ValidateSweep, ObjectiveParallelismAndEarlyStopping) {
  SweepSpec s = spec("optimizer.learning_rate", "[0.001, 0.01]");
  s.parallel = 3;
  EXPECT_TERN_ERROR(validate_sweep(s, 2), ErrorCode::kInvalidArgument,
                    "parallel 3 is more than the 2 trials of the sweep");
  s.parallel = 1;
  s.objective.metric = "val_f1";
  EXPECT_TERN_ERROR(validate_sweep(s, 2), ErrorCode::kInvalidArgument,
                    "objective.metric 'val_f1' is not logged by");
  s.objective.metric = "test_accuracy";
  s.early_stopping.rule = EarlyStoppingSpec::Rule::kMedian;
  EXPECT_TERN_ERROR(validate_sweep(s, 2), ErrorCode::kInvalidArgument,
                    "needs a per-epoch objective");
  s.objective.metric = "val_loss";
  s.early_stopping = {.rule = EarlyStoppingSpec::Rule::kAsha, .min_epochs = 4};
  EXPECT_TERN_ERROR(validate_sweep(s, 2), ErrorCode::kInvalidArgument,
                    "min_epochs 4 leaves no rung below max_epochs 4");
  s.early_stopping.min_epochs = 1;
  EXPECT_NO_THROW(validate_sweep(s, 2));
  s.base_config = dir_ + "/noval.toml";
  EXPECT_TERN_ERROR(validate_sweep(s, 2), ErrorCode::kInvalidArgument,
                    "'val_loss' needs validation data");
  s.base_config = dir_ + "/missing.toml";
  EXPECT_TERN_ERROR(validate_sweep(s, 2), ErrorCode::kNotFound, "missing.toml");
  s.base_config = dir_ + "/base.toml";
  s.launcher = {.kind = LauncherSpec::Kind::kMpirun, .hosts = {"a:1"}};
  s.parallel = 2;
  EXPECT_TERN_ERROR(validate_sweep(s, 2), ErrorCode::kInvalidArgument,
                    "parallel 2 is more than the 1 slots of launcher.hosts");
  EXPECT_EQ(mpirun_slots({"a", "b:3"}), 4);
  EXPECT_TERN_ERROR(mpirun_slots({"a:x"}), ErrorCode::kInvalidArgument, "'a:x'");
}

TEST(ExampleSweep, TheExampleValidates) {
  // examples/fashion_mnist_sweep.toml: 27 trials, each a valid config (ctest runs this test from
  // the source folder).
  SweepSpec s = load_sweep("examples/fashion_mnist_sweep.toml");
  SweepPlan p = validate_sweep(s, 2);
  EXPECT_EQ(p.trials.size(), 27u);
  EXPECT_EQ(p.parallel, 2);
  EXPECT_EQ(p.threads_per_trial, 1);
  EXPECT_EQ(p.epochs, 9);
  EXPECT_EQ(p.trials[26].overrides[2].key, "data.transforms[2].max_delta");
  EXPECT_EQ(p.trials[26].overrides[2].value.toml, "0.2");
  EXPECT_EQ(s.early_stopping.rule, EarlyStoppingSpec::Rule::kAsha);
}

}  // namespace
}  // namespace tern::sweep
