// `tern train` -> `tern export` -> `tern predict --model`: the exported model, run without the
// config, predicts what `tern predict` with the config does.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "tern/io/atomic_file.h"
#include "tests/support/idx_writer.h"
#include "tools/tern/cli_parse.h"
#include "tools/tern/commands.h"

namespace tern::tools {
namespace {

int run(std::vector<std::string> args, int (*cmd)(int, char**)) {
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  return cmd(static_cast<int>(argv.size()), argv.data());
}

// Column `col` of every CSV line (lines starting with a digit).
std::vector<std::string> column(const std::string& path, size_t col) {
  std::vector<std::string> out;
  std::istringstream in(io::read_file(path));
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] < '0' || line[0] > '9') continue;
    std::istringstream fields(line);
    std::string f;
    for (size_t i = 0; i <= col && std::getline(fields, f, ','); ++i) {
    }
    out.push_back(f);
  }
  return out;
}

TEST(ExportCommand, ExportedModelPredictsWithoutTheConfig) {
  std::string dir = ::testing::TempDir() + "/tern_export_command";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  for (auto [split, n] : {std::pair<std::string, uint32_t>{"train", 64}, {"test", 40}}) {
    std::vector<uint8_t> images(n * 36), labels(n);
    for (uint32_t i = 0; i < n; ++i) {
      labels[i] = static_cast<uint8_t>(i % 3);
      for (uint32_t k = 0; k < 36; ++k)
        images[i * 36 + k] = static_cast<uint8_t>((k % 3 == i % 3 ? 200 : 10) + (i * k) % 40);
    }
    ::tern::testing::write_idx_u8(dir + "/" + split + "-images.idx", {n, 6, 6}, images);
    ::tern::testing::write_idx_u8(dir + "/" + split + "-labels.idx", {n}, labels);
  }
  std::string config = dir + "/tiny.toml";
  std::ofstream(config) << "[model]\nname = \"mlp\"\n[model.args]\nunits = [8]\n"
                        << "[data]\ndataset = \"idx\"\nnum_classes = 3\n"
                        << "train_images = \"" << dir << "/train-images.idx\"\n"
                        << "train_labels = \"" << dir << "/train-labels.idx\"\n"
                        << "test_images = \"" << dir << "/test-images.idx\"\n"
                        << "test_labels = \"" << dir << "/test-labels.idx\"\n"
                        << "[training]\nepochs = 1\nbatch_size = 16\n"
                        << "[output]\ndir = \"" << dir << "/run\"\n";
  ASSERT_EQ(run({"train", config, "--quiet"}, cmd_train), 0);
  std::string base = dir + "/models";
  ASSERT_EQ(run({"export", config, "--out", base + "/1"}, cmd_export), 0);
  EXPECT_TRUE(std::filesystem::exists(base + "/1/graph.tern"));
  // A version is never overwritten; the version must be numeric.
  EXPECT_EQ(run({"export", config, "--out", base + "/1"}, cmd_export), 1);
  EXPECT_THROW(run({"export", config, "--out", base + "/latest"}, cmd_export),
               UsageError);  // main: exit 2
  EXPECT_FALSE(std::filesystem::exists(base + "/latest"));

  std::string with_config = dir + "/config.csv", with_model = dir + "/model.csv";
  ASSERT_EQ(run({"predict", config, "--limit", "-1", "--output", with_config}, cmd_predict), 0);
  ASSERT_EQ(run({"predict", "--model", base + "/1", "--input", dir + "/test-images.idx", "--limit",
                 "-1", "--batch", "7", "--output", with_model},
                cmd_predict),
            0);
  std::vector<std::string> want = column(with_config, 1), got = column(with_model, 1);
  ASSERT_EQ(got.size(), 40u);
  EXPECT_EQ(got, want);
  EXPECT_EQ(column(with_model, 0).back(), "39");
}

}  // namespace
}  // namespace tern::tools
