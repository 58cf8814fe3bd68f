// examples/train_from_config, run as a built binary on a tiny IDX dataset and config written by
// the test (a few steps): it prints the test metrics and the weights' hash, and the weights file
// it saves loads into the model the config describes with that hash.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "tern/base/philox.h"
#include "tern/config/builders.h"
#include "tern/config/training_data.h"
#include "tern/train/model_weights.h"
#include "tests/support/idx_writer.h"

namespace tern {
namespace {

struct CommandResult {
  int exit_code = -1;
  std::string output;  // stdout and stderr together
};

CommandResult run_example(const std::string& args) {
  std::string cmd = std::string("'") + TERN_TRAIN_FROM_CONFIG_PATH + "' " + args + " 2>&1";
  CommandResult r;
  FILE* pipe = popen(cmd.c_str(), "r");
  if (!pipe) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), pipe)) > 0) r.output.append(buf, n);
  int status = pclose(pipe);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

// The value printed after "key: " on its own line ("" if absent).
std::string printed(const std::string& output, const std::string& key) {
  const size_t at = output.find("\n" + key + ": ");
  if (at == std::string::npos) return "";
  const size_t begin = at + key.size() + 3;
  return output.substr(begin, output.find('\n', begin) - begin);
}

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

TEST(TrainFromConfigExample, TrainsPrintsMetricsAndSavesWeights) {
  // Per process: ctest runs this binary twice at once (examples, cpu_isa_baseline_examples).
  const std::string dir =
      ::testing::TempDir() + "/tern_train_from_config_" + std::to_string(getpid());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  write_split(dir, "train", 512, 1);
  write_split(dir, "test", 64, 2);
  const std::string cfg = dir + "/tiny.toml";
  std::ofstream(cfg) << "[model]\nname = \"mlp\"\n[model.args]\nunits = [32]\n"
                     << "[data]\ndataset = \"idx\"\nnum_classes = 4\n"
                     << "train_images = \"" << dir << "/train-images.idx\"\n"
                     << "train_labels = \"" << dir << "/train-labels.idx\"\n"
                     << "test_images = \"" << dir << "/test-images.idx\"\n"
                     << "test_labels = \"" << dir << "/test-labels.idx\"\n"
                     << "[optimizer]\nlearning_rate = 0.02\n"
                     << "[training]\nepochs = 5\nbatch_size = 32\n"
                     << "[output]\ndir = \"" << dir << "/run\"\n";
  CommandResult r = run_example("'" + cfg +
                                "' --set training.epochs=2 --set training.steps_per_epoch=6 "
                                "--set training.threads=1");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(printed(r.output, "epochs"), "2") << r.output;
  EXPECT_GT(std::stod(printed(r.output, "test_accuracy")), 0.8) << r.output;
  EXPECT_FALSE(printed(r.output, "test_loss").empty()) << r.output;
  EXPECT_EQ(printed(r.output, "weights"), dir + "/run/weights.safetensors");
  const std::string sha = printed(r.output, "weights_sha256");
  ASSERT_EQ(sha.size(), 64u) << r.output;

  // The saved file holds the printed weights.
  config::TrainConfig c = config::load_config(cfg);
  std::shared_ptr<nn::Model> model = config::make_model(c, config::load_data(c).sample_shape);
  EXPECT_NE(train::weights_sha256(*model), sha);
  model->load_weights(dir + "/run/weights.safetensors");
  EXPECT_EQ(train::weights_sha256(*model), sha);
  std::filesystem::remove_all(dir);
}

TEST(TrainFromConfigExample, BadArgumentsAndConfigsAreClearErrors) {
  CommandResult usage = run_example("");
  EXPECT_EQ(usage.exit_code, 2);
  EXPECT_NE(usage.output.find("usage: train_from_config CONFIG"), std::string::npos);
  CommandResult set = run_example("examples/fashion_mnist.toml --set");
  EXPECT_EQ(set.exit_code, 2);
  EXPECT_NE(set.output.find("expected --set key=value"), std::string::npos) << set.output;
  const std::string cfg =
      ::testing::TempDir() + "/tern_bad_example_" + std::to_string(getpid()) + ".toml";
  std::ofstream(cfg) << "[optimizer]\nname = \"sgd\"\nbeta1 = 0.5\n";
  CommandResult bad = run_example("'" + cfg + "'");
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.output.find(cfg + ":3: optimizer.beta1 does not apply to optimizer 'sgd'"),
            std::string::npos)
      << bad.output;
  std::filesystem::remove(cfg);
}

}  // namespace
}  // namespace tern
