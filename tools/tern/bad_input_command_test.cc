// The `tern` commands on the bad inputs of the bad-input report (BAD-INPUTS-2026-11-23), one test
// per finding, each with inputs the test writes itself: every case here crashed, hung, lost data
// or exited 0 where an error was due before its fix.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "tern/base/philox.h"
#include "tern/io/atomic_file.h"
#include "tern/io/safetensors.h"
#include "tests/support/idx_writer.h"
#include "tests/support/random_tensor.h"
#include "tools/tern/commands.h"

namespace tern::tools {
namespace {

namespace fs = std::filesystem;
using ::tern::testing::write_idx_u8;

int run(std::vector<std::string> args, int (*cmd)(int, char**)) {
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  return cmd(static_cast<int>(argv.size()), argv.data());
}

// 8x8 images; class k (of 4) has a bright quadrant k.
void write_dataset(const std::string& dir, const std::string& split, uint32_t n, uint64_t seed) {
  std::vector<uint8_t> images(n * 64), labels(n);
  PhiloxStream rng(seed);
  for (uint32_t i = 0; i < n; ++i) {
    uint32_t k = static_cast<uint32_t>(rng.next_below(4));
    labels[i] = static_cast<uint8_t>(k);
    for (uint32_t p = 0; p < 64; ++p) {
      bool bright = (p / 32) * 2 + (p % 8) / 4 == k;
      images[i * 64 + p] = static_cast<uint8_t>((bright ? 180 : 20) + rng.next_below(60));
    }
  }
  write_idx_u8(dir + "/" + split + "-images.idx", {n, 8, 8}, images);
  write_idx_u8(dir + "/" + split + "-labels.idx", {n}, labels);
}

class BadInputCommand : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = str_cat(::testing::TempDir(), "/tern_bad_input_cmd_", ::getpid());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    write_dataset(dir_, "train", 128, 1);
    write_dataset(dir_, "test", 64, 2);
    config_ = dir_ + "/tiny.toml";
    std::ofstream(config_) << "[model]\nname = \"mlp\"\n[model.args]\nunits = [16]\n"
                           << "[data]\ndataset = \"idx\"\nnum_classes = 4\n"
                           << "train_images = \"" << dir_ << "/train-images.idx\"\n"
                           << "train_labels = \"" << dir_ << "/train-labels.idx\"\n"
                           << "test_images = \"" << dir_ << "/test-images.idx\"\n"
                           << "test_labels = \"" << dir_ << "/test-labels.idx\"\n"
                           << "[optimizer]\nlearning_rate = 0.01\n"
                           << "[training]\nepochs = 2\nbatch_size = 32\n"
                           << "[output]\ndir = \"" << dir_ << "/run\"\n";
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string weights() const { return dir_ + "/run/weights.safetensors"; }

  std::string dir_, config_;
};

// F3: 10^5..10^6 threads crashed (SIGSEGV in libgomp; std::terminate in the thread pool).
TEST_F(BadInputCommand, HugeThreadCountsAreUsageErrors) {
  EXPECT_TERN_ERROR(
      run({"train", config_, "--quiet", "--set", "training.threads=1000000"}, cmd_train),
      ErrorCode::kInvalidArgument, "key 'training.threads' must be 0 (all cores) or 1..1024");
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(
      run({"data", "bench", "idx " + dir_ + "/train-images.idx | batch 8", "--threads", "1000000"},
          cmd_data),
      2);
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("--threads must be -1 (AUTOTUNE), 1..1024"), std::string::npos) << err;
}

}  // namespace
}  // namespace tern::tools
