// config::Trainer end to end on a tiny IDX dataset written by the test: fit with the config's
// callbacks (and the caller's), evaluate, save and reload weights, resume from a checkpoint.
#include "tern/config/trainer.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "tern/base/philox.h"
#include "tern/train/model_weights.h"
#include "tests/support/idx_writer.h"
#include "tests/support/random_tensor.h"

namespace tern::config {
namespace {

// 8x8 images; class k (of 4) has a bright quadrant k.
void write_split(const std::string& dir, const std::string& split, uint32_t n, uint64_t seed) {
  std::vector<uint8_t> images(n * 64), labels(n);
  PhiloxStream rng(seed);
  for (uint32_t i = 0; i < n; ++i) {
    const auto k = static_cast<uint32_t>(rng.next_below(4));
    labels[i] = static_cast<uint8_t>(k);
    for (uint32_t p = 0; p < 64; ++p) {
      const bool bright = ((p / 8) / 4) * 2 + (p % 8) / 4 == k;
      images[i * 64 + p] = static_cast<uint8_t>((bright ? 180 : 20) + rng.next_below(60));
    }
  }
  ::tern::testing::write_idx_u8(dir + "/" + split + "-images.idx", {n, 8, 8}, images);
  ::tern::testing::write_idx_u8(dir + "/" + split + "-labels.idx", {n}, labels);
}

class CountEpochs : public train::Callback {
 public:
  void on_epoch_end(int, train::Logs&) override { ++epochs; }
  int epochs = 0;
};

class TrainerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "/tern_trainer_test";
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    write_split(dir_, "train", 256, 1);
    write_split(dir_, "test", 64, 2);
    path_ = dir_ + "/tiny.toml";
    std::ofstream(path_) << "[model]\nname = \"mlp\"\n[model.args]\nunits = [16]\n"
                         << "[data]\ndataset = \"idx\"\nnum_classes = 4\nvalidate_on_test = true\n"
                         << "train_images = \"" << dir_ << "/train-images.idx\"\n"
                         << "train_labels = \"" << dir_ << "/train-labels.idx\"\n"
                         << "test_images = \"" << dir_ << "/test-images.idx\"\n"
                         << "test_labels = \"" << dir_ << "/test-labels.idx\"\n"
                         << "[optimizer]\nlearning_rate = 0.01\n"
                         << "[training]\nepochs = 3\nbatch_size = 32\ndeterministic = true\n"
                         << "[callbacks.checkpoint]\n"
                         << "[output]\ndir = \"" << dir_ << "/run\"\n";
  }
  std::string dir_, path_;
};

TEST_F(TrainerTest, FitsEvaluatesAndSavesWeightsThatReload) {
  TrainConfig cfg = load_config(path_, {"training.memory_limit=64MiB"});
  cfg.training.fit.verbose = 0;
  auto counter = std::make_shared<CountEpochs>();
  cfg.training.fit.callbacks = {counter};
  Trainer trainer(cfg);
  EXPECT_EQ(trainer.data().train_samples, 256);
  EXPECT_EQ(trainer.data().steps_per_epoch, 8);
  EXPECT_EQ(trainer.config().training.fit.memory_limit_bytes, int64_t{64} << 20);
  train::History h = trainer.fit();
  EXPECT_EQ(h.epoch.size(), 3u);
  EXPECT_EQ(counter->epochs, 3);                                    // the caller's callback ran
  EXPECT_EQ(h.at("val_accuracy").size(), 3u);                       // validate_on_test
  EXPECT_TRUE(std::filesystem::exists(dir_ + "/run/checkpoints"));  // [callbacks.checkpoint]
  nn::EvaluateResult test = trainer.evaluate();
  EXPECT_GT(test.metric("accuracy"), 0.9);
  trainer.model().save_weights(trainer.weights_path());
  EXPECT_EQ(trainer.weights_path(), dir_ + "/run/weights.safetensors");

  // Another Trainer (no training split) with the saved weights evaluates the same.
  Trainer eval(load_config(path_), /*with_train=*/false);
  EXPECT_EQ(eval.data().train, nullptr);
  EXPECT_NE(train::weights_sha256(eval.model()), train::weights_sha256(trainer.model()));
  eval.model().load_weights(trainer.weights_path());
  EXPECT_EQ(train::weights_sha256(eval.model()), train::weights_sha256(trainer.model()));
  EXPECT_DOUBLE_EQ(eval.evaluate().loss, test.loss);
  EXPECT_TERN_ERROR(eval.fit(), ErrorCode::kInvalidArgument, "without the training split");
}

TEST_F(TrainerTest, ResumesFromTheLastCheckpointOfTheSameConfigOnly) {
  TrainConfig cfg = load_config(path_, {"training.epochs=2"});
  cfg.training.fit.verbose = 0;
  Trainer first(cfg);
  first.fit();
  const std::string sha = train::weights_sha256(first.model());

  Trainer again(cfg);
  std::optional<std::string> from = again.resume();
  ASSERT_TRUE(from.has_value());
  EXPECT_NE(from->find("ckpt-"), std::string::npos) << *from;
  EXPECT_EQ(train::weights_sha256(again.model()), sha);
  EXPECT_EQ(again.fit().epoch.size(), 0u);  // nothing left to train

  TrainConfig changed = load_config(path_, {"training.epochs=2", "optimizer.learning_rate=0.5"});
  Trainer other(changed);
  EXPECT_TERN_ERROR(other.resume(), ErrorCode::kFailedPrecondition, "different config");
  EXPECT_TRUE(other.resume(/*ignore_config_change=*/true).has_value());
}

}  // namespace
}  // namespace tern::config
