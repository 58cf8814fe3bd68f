// `tern train` -> `tern eval` -> `tern predict` on a tiny IDX dataset written by the test.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "tern/base/philox.h"
#include "tern/io/atomic_file.h"
#include "tests/support/idx_writer.h"
#include "tests/support/random_tensor.h"
#include "tools/tern/commands.h"

namespace tern::tools {
namespace {

using ::tern::testing::write_idx_u8;

// 8x8 images; class k (of 4) has a bright quadrant k.
void write_dataset(const std::string& dir, const std::string& split, uint32_t n, uint64_t seed) {
  std::vector<uint8_t> images(n * 64), labels(n);
  PhiloxStream rng(seed);
  for (uint32_t i = 0; i < n; ++i) {
    uint32_t k = static_cast<uint32_t>(rng.next_below(4));
    labels[i] = static_cast<uint8_t>(k);
    for (uint32_t r = 0; r < 8; ++r) {
      for (uint32_t c = 0; c < 8; ++c) {
        bool bright = (r / 4) * 2 + (c / 4) == k;
        images[i * 64 + r * 8 + c] = static_cast<uint8_t>((bright ? 180 : 20) + rng.next_below(60));
      }
    }
  }
  write_idx_u8(dir + "/" + split + "-images.idx", {n, 8, 8}, images);
  write_idx_u8(dir + "/" + split + "-labels.idx", {n}, labels);
}

int run(std::vector<std::string> args, int (*cmd)(int, char**)) {
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  return cmd(static_cast<int>(argv.size()), argv.data());
}

class TrainCommand : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "/tern_train_command";
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    write_dataset(dir_, "train", 512, 1);
    write_dataset(dir_, "test", 128, 2);
    config_ = dir_ + "/tiny.toml";
    std::ofstream(config_) << "[model]\nname = \"mlp\"\n[model.args]\nunits = [32]\n"
                           << "[data]\ndataset = \"idx\"\nnum_classes = 4\n"
                           << "train_images = \"" << dir_ << "/train-images.idx\"\n"
                           << "train_labels = \"" << dir_ << "/train-labels.idx\"\n"
                           << "test_images = \"" << dir_ << "/test-images.idx\"\n"
                           << "test_labels = \"" << dir_ << "/test-labels.idx\"\n"
                           << "[optimizer]\nlearning_rate = 0.01\n"
                           << "[training]\nepochs = 3\nbatch_size = 32\ndeterministic = true\n"
                           << "[output]\ndir = \"" << dir_ << "/run\"\n";
  }
  std::string dir_, config_;
};

TEST_F(TrainCommand, TrainsEvaluatesAndPredicts) {
  std::string metrics = dir_ + "/m.json";
  ASSERT_EQ(run({"train", config_, "--quiet", "--metrics-json", metrics}, cmd_train), 0);
  nlohmann::json j = nlohmann::json::parse(io::read_file(metrics));
  for (const char* key : {"test_accuracy", "test_loss", "epochs", "train_seconds",
                          "samples_per_second", "weights_sha256"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
  EXPECT_GT(j["test_accuracy"].get<double>(), 0.95);
  EXPECT_EQ(j["epochs"].get<int>(), 3);
  EXPECT_EQ(j["weights_sha256"].get<std::string>().size(), 64u);

  // A second deterministic run gives the same weights.
  std::string metrics2 = dir_ + "/m2.json";
  ASSERT_EQ(run({"train", config_, "--quiet", "--metrics-json", metrics2}, cmd_train), 0);
  EXPECT_EQ(nlohmann::json::parse(io::read_file(metrics2))["weights_sha256"], j["weights_sha256"]);

  ::testing::internal::CaptureStdout();
  ASSERT_EQ(run({"eval", config_}, cmd_eval), 0);
  std::string eval_out = ::testing::internal::GetCapturedStdout();
  EXPECT_NE(eval_out.find("test_accuracy: "), std::string::npos) << eval_out;

  std::string csv = dir_ + "/pred.csv";
  ASSERT_EQ(run({"predict", config_, "--limit", "5", "--output", csv}, cmd_predict), 0);
  std::istringstream lines(io::read_file(csv));
  std::string header, line;
  std::getline(lines, header);
  EXPECT_EQ(header, "index,predicted,label,p0,p1,p2,p3");
  int rows = 0, right = 0;
  while (std::getline(lines, line)) {
    ++rows;
    std::istringstream f(line);
    std::string idx, pred, label;
    std::getline(f, idx, ',');
    std::getline(f, pred, ',');
    std::getline(f, label, ',');
    right += pred == label;
  }
  EXPECT_EQ(rows, 5);
  EXPECT_GE(right, 4);
}

TEST_F(TrainCommand, MixedFloat16Trains) {
  std::string metrics = dir_ + "/f16.json";
  ASSERT_EQ(
      run({"train", config_, "--quiet", "--metrics-json", metrics, "--set",
           "training.precision=mixed_float16", "--set", "training.loss_scale.growth_interval=10"},
          cmd_train),
      0);
  nlohmann::json j = nlohmann::json::parse(io::read_file(metrics));
  EXPECT_GT(j["test_accuracy"].get<double>(), 0.9);
  EXPECT_EQ(j["epochs"].get<int>(), 3);
}

TEST_F(TrainCommand, BadInputsAreClearErrors) {
  EXPECT_TERN_ERROR(run({"train", config_, "--quiet", "--set", "data.num_classes=3"}, cmd_train),
                    ErrorCode::kInvalidArgument, "outside [0, 3)");
  EXPECT_TERN_ERROR(run({"eval", config_, "--weights", dir_ + "/missing.safetensors"}, cmd_eval),
                    ErrorCode::kNotFound, "missing.safetensors");
  EXPECT_EQ(run({"train", "--help"}, cmd_train), 0);
  EXPECT_NE(run({"train"}, cmd_train), 0);  // the config is required
}

}  // namespace
}  // namespace tern::tools
