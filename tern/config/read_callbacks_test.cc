// [callbacks]: each table fills the options struct of its tern/train callback, paths default under
// output.dir, and the config hash leaves [callbacks] and [output] out.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>

#include "tern/config/builders.h"
#include "tern/config/config.h"
#include "tests/support/random_tensor.h"

namespace tern::config {
namespace {

std::string write_config(const std::string& name, const std::string& text) {
  std::string dir = ::testing::TempDir() + "/tern_callbacks_config_test";
  std::filesystem::create_directories(dir);
  std::string path = dir + "/" + name;
  std::ofstream(path) << text;
  return path;
}

TEST(CallbacksConfig, TablesFillTheTrainOptionsWithPathsUnderOutputDir) {
  std::string p = write_config("cb.toml", R"(
[training]
check_numerics = true
[callbacks.checkpoint]
save_freq = 50
keep_last = 2
[callbacks.tensorboard]
update_freq = "epoch"
histogram_freq = 2
[callbacks.profiler]
start_step = 3
steps = 4
[callbacks.csv_logger]
[callbacks.early_stopping]
patience = 2
mode = "max"
monitor = "val_accuracy"
[output]
dir = "runs/cb"
)");
  ::unsetenv("TERN_DETERMINISTIC");
  TrainConfig c = load_config(p);
  const CallbacksConfig& k = c.callbacks;
  EXPECT_TRUE(c.training.check_numerics);
  EXPECT_FALSE(c.training.deterministic);
  ASSERT_TRUE(k.checkpoint && k.tensorboard && k.profiler && k.csv_logger && k.early_stopping);
  EXPECT_FALSE(k.backup_and_restore || k.reduce_lr_on_plateau);
  EXPECT_EQ(k.checkpoint->save_freq, 50);
  EXPECT_EQ(k.checkpoint->keep_last, 2);
  EXPECT_EQ(k.checkpoint->dir, "runs/cb/checkpoints");
  EXPECT_EQ(k.checkpoint->config_sha256, c.sha256);
  EXPECT_EQ(k.tensorboard->update_freq, 0);
  EXPECT_EQ(k.tensorboard->histogram_freq, 2);
  EXPECT_EQ(k.tensorboard->log_dir, "runs/cb/logs");
  EXPECT_EQ(k.tensorboard->hparams.at("callbacks.checkpoint.save_freq"), "50");
  EXPECT_EQ(k.tensorboard->hparams.at("config_sha256"), c.sha256);
  EXPECT_EQ(k.profiler->start_step, 3);
  EXPECT_EQ(k.profiler->num_steps, 4);
  EXPECT_EQ(k.profiler->trace_path, "runs/cb/trace.json");
  EXPECT_EQ(k.csv_logger->path, "runs/cb/training.csv");
  EXPECT_TRUE(k.csv_logger->append);
  EXPECT_EQ(k.early_stopping->patience, 2);
  EXPECT_EQ(k.early_stopping->mode, "max");
  EXPECT_EQ(make_callbacks(c).size(), 6u);  // + TerminateOnNaN
  // A data-parallel worker other than rank 0: no TensorBoard, CSV log or profiler files.
  EXPECT_EQ(make_callbacks(c, /*chief=*/false).size(), 3u);
  EXPECT_EQ(c.effective.at("callbacks.checkpoint.save_freq"), "50");
  // [callbacks] and [output] do not change the hash; training keys do.
  TrainConfig other = load_config(p, {"callbacks.checkpoint.keep_last=5", "output.dir=elsewhere"});
  EXPECT_EQ(other.sha256, c.sha256);
  EXPECT_EQ(other.callbacks.checkpoint->dir, "elsewhere/checkpoints");
  EXPECT_NE(load_config(p, {"training.seed=7"}).sha256, c.sha256);
  ::setenv("TERN_DETERMINISTIC", "1", 1);
  EXPECT_TRUE(load_config(p).training.deterministic);
  ::unsetenv("TERN_DETERMINISTIC");
  EXPECT_TERN_ERROR(
      load_config(p, {"callbacks.checkpoint.save_freq=0"}), ErrorCode::kInvalidArgument,
      "callbacks.checkpoint.save_freq' must be \"epoch\" or a positive number of batches");
  EXPECT_TERN_ERROR(load_config(p, {"callbacks.tensorboard.log_dri=\"x\""}),
                    ErrorCode::kInvalidArgument, "did you mean 'callbacks.tensorboard.log_dir'");
  EXPECT_TERN_ERROR(load_config(p, {"callbacks.early_stopping.mode=maximum"}),
                    ErrorCode::kInvalidArgument,
                    "key 'callbacks.early_stopping.mode' = 'maximum' is not one of auto, min, max");
}

}  // namespace
}  // namespace tern::config
