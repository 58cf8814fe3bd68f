// The `tern` commands on the bad inputs of the bad-input report (BAD-INPUTS-2026-11-23), one test
// per finding, each with inputs the test writes itself: every case here crashed, hung, lost data
// or exited 0 where an error was due before its fix.
#include <gtest/gtest.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "tern/base/philox.h"
#include "tern/io/atomic_file.h"
#include "tern/io/safetensors.h"
#include "tern/train/checkpoint.h"
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

// A CSV of two Gaussian classes over 8 features (class 1 around +1, class 0 around -1), with the
// cell (nan_row, 3) "nan" when nan_row >= 0; `rows` = 0 writes only the header.
void write_csv(const std::string& path, int rows, uint64_t seed, int nan_row = -1) {
  std::ofstream os(path);
  for (int i = 0; i < 8; ++i) os << "t" << i << ",";
  os << "label\n";
  PhiloxStream rng(seed);
  for (int r = 0; r < rows; ++r) {
    int y = static_cast<int>(rng.next_below(2));
    for (int i = 0; i < 8; ++i) {
      if (r == nan_row && i == 3) {
        os << "nan,";
      } else {
        os << (y ? 1.0 : -1.0) + (rng.next_double() - 0.5) << ",";
      }
    }
    os << y << "\n";
  }
}

std::string csv_config(const std::string& dir, const std::string& train) {
  std::string path = dir + "/csv.toml";
  std::ofstream(path) << "[model]\nname = \"mlp\"\n[model.args]\nunits = [16]\n"
                      << "[data]\nsource = \"csv\"\ntrain_files = \"" << train << "\"\n"
                      << "test_files = \"" << dir << "/test.csv\"\nnum_classes = 2\n"
                      << "[data.csv]\ncolumns = [\"float\", \"float\", \"float\", \"float\", "
                      << "\"float\", \"float\", \"float\", \"float\", \"int64\"]\n"
                      << "[training]\nepochs = 2\nbatch_size = 16\n"
                      << "[output]\ndir = \"" << dir << "/run\"\n";
  return path;
}

// F1 + F4: one "nan" cell in a CSV. The fused matmul+bias+relu mapped it to 0: a finite loss,
// TerminateOnNaN silent, NaN weights saved, exit 0. Now the loss is NaN, training stops, the run
// is an error and the good weights of the run before stay.
TEST_F(BadInputCommand, OneNaNCellFailsTheRunAndKeepsTheGoodWeights) {
  write_csv(dir_ + "/train.csv", 400, 1);
  write_csv(dir_ + "/train_nan.csv", 400, 1, /*nan_row=*/150);
  write_csv(dir_ + "/test.csv", 100, 2);
  const std::string good = csv_config(dir_, dir_ + "/train.csv");
  ASSERT_EQ(run({"train", good, "--quiet"}, cmd_train), 0);
  const std::string before = io::read_file(weights());
  for (const char* deterministic : {"false", "true"}) {  // fused (oneDNN epilogue) and unfused
    SCOPED_TRACE(str_cat("training.deterministic=", deterministic));
    EXPECT_TERN_ERROR(
        run({"train", good, "--quiet", "--set", "data.train_files=\"" + dir_ + "/train_nan.csv\"",
             "--set", str_cat("training.deterministic=", deterministic)},
            cmd_train),
        ErrorCode::kFailedPrecondition, "training failed: the loss of epoch 1 is nan");
    EXPECT_EQ(io::read_file(weights()), before) << "the good weights were overwritten";
  }
}

// F4: a learning rate of 1e30 blows the weights up; TerminateOnNaN stopped training, then tern
// train saved 2,525 NaN weights over the good ones and exited 0.
TEST_F(BadInputCommand, DivergedTrainingFailsAndKeepsTheGoodWeights) {
  ASSERT_EQ(run({"train", config_, "--quiet"}, cmd_train), 0);
  const std::string before = io::read_file(weights());
  EXPECT_TERN_ERROR(run({"train", config_, "--quiet", "--set", "optimizer.learning_rate=1e30",
                         "--metrics-json", dir_ + "/m.json"},
                        cmd_train),
                    ErrorCode::kFailedPrecondition, "weights not saved");
  EXPECT_EQ(io::read_file(weights()), before);
  EXPECT_FALSE(fs::exists(dir_ + "/m.json"));
  // Without TerminateOnNaN the run goes on to the end with ruined weights: the same error.
  EXPECT_TERN_ERROR(run({"train", config_, "--quiet", "--set", "optimizer.learning_rate=1e30",
                         "--set", "callbacks.terminate_on_nan=false"},
                        cmd_train),
                    ErrorCode::kFailedPrecondition, "from before is kept");
  EXPECT_EQ(io::read_file(weights()), before);
}

// F8: no training data "succeeded": exit 0, loss 0.0000, untrained weights over the good ones.
TEST_F(BadInputCommand, NoTrainingDataIsAnError) {
  write_csv(dir_ + "/train.csv", 200, 1);
  write_csv(dir_ + "/header_only.csv", 0, 1);
  write_csv(dir_ + "/test.csv", 100, 2);
  const std::string cfg = csv_config(dir_, dir_ + "/train.csv");
  ASSERT_EQ(run({"train", cfg, "--quiet"}, cmd_train), 0);
  const std::string before = io::read_file(weights());
  EXPECT_TERN_ERROR(
      run({"train", cfg, "--quiet", "--set", "training.steps_per_epoch=0"}, cmd_train),
      ErrorCode::kInvalidArgument, "key 'training.steps_per_epoch' must be -1 (the whole split)");
  EXPECT_TERN_ERROR(
      run({"train", cfg, "--quiet", "--set", "data.train_files=\"" + dir_ + "/header_only.csv\""},
          cmd_train),
      ErrorCode::kInvalidArgument, "the training data yielded no batch in epoch 1");
  EXPECT_EQ(io::read_file(weights()), before);
}

// Flips one byte in the middle of a file.
void flip_a_byte(const std::string& path) {
  std::string bytes = io::read_file(path);
  bytes[bytes.size() / 2] ^= 0x55;
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

// F5: a fresh run over an earlier run's checkpoints wrote none of its own (exit 0), and --resume
// over a damaged only checkpoint restarted from scratch (exit 0), after which keep_last pruned the
// new good checkpoints in favour of the damaged one.
TEST_F(BadInputCommand, CheckpointsOfAnEarlierRunAndDamagedOnesAreExplicit) {
  const std::vector<std::string> ckpt = {"--quiet", "--set", "callbacks.checkpoint.save_freq=2",
                                         "--set", "callbacks.checkpoint.keep_last=0"};
  auto train = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = {"train", config_};
    args.insert(args.end(), ckpt.begin(), ckpt.end());
    args.insert(args.end(), extra.begin(), extra.end());
    return run(args, cmd_train);
  };
  ASSERT_EQ(train({}), 0);  // 2 epochs of 4 steps: ckpt-2 ... ckpt-8
  const std::string dir = dir_ + "/run/checkpoints";
  EXPECT_TERN_ERROR(train({"--set", "training.seed=2"}), ErrorCode::kFailedPrecondition,
                    "holds 4 checkpoint(s) of an earlier run (newest ckpt-0000000008)");
  // The newest is damaged: --resume continues from ckpt-6 and sets ckpt-8 aside.
  flip_a_byte(dir + "/ckpt-0000000008/weights.safetensors");
  EXPECT_EQ(train({"--resume"}), 0);
  EXPECT_TRUE(fs::is_directory(dir + "/damaged-ckpt-0000000008-" + std::to_string(::getpid())));
  EXPECT_NO_THROW(train::read_checkpoint(dir + "/ckpt-0000000008"));  // this run's own
  // Every checkpoint damaged: --resume is an error, not a silent start from scratch.
  for (const std::string& c : train::list_checkpoints(dir)) flip_a_byte(c + "/manifest.json");
  EXPECT_TERN_ERROR(train({"--resume"}), ErrorCode::kDataLoss,
                    "--resume: no checkpoint in " + dir + " reads back whole (4 damaged)");
}

// F9: on a full disk the CSV logger (50 epochs) and predict --output left 0-byte files and exited
// 0. /dev/full fails every write with ENOSPC (neither writer creates or renames anything).
TEST_F(BadInputCommand, AFullDiskIsAnErrorForTheCsvLogAndPredictions) {
  ASSERT_EQ(run({"train", config_, "--quiet"}, cmd_train), 0);
  EXPECT_TERN_ERROR(
      run({"train", config_, "--quiet", "--set", "callbacks.csv_logger.path=\"/dev/full\""},
          cmd_train),
      ErrorCode::kUnavailable, "CSVLogger: cannot write '/dev/full': No space left on device");
  // F23: a folder that cannot be made was "filesystem error: cannot create directories".
  EXPECT_TERN_ERROR(run({"train", config_, "--quiet", "--set",
                         "callbacks.csv_logger.path=\"/proc/no/such/log.csv\""},
                        cmd_train),
                    ErrorCode::kUnavailable,
                    "CSVLogger: cannot create the folder of '/proc/no/such/log.csv'");
  EXPECT_TERN_ERROR(
      run({"predict", config_, "--output", "/dev/full", "--limit", "-1"}, cmd_predict),
      ErrorCode::kUnavailable, "predict: cannot write '/dev/full': No space left on device");
}

// F13 (sites 1 and 3): a label of INT64_MAX was printed through a double cast back to int64
// (-9223372036854775808, undefined: UBSan); steps_per_epoch = 2^63-1 overflowed the samples count.
TEST_F(BadInputCommand, HugeLabelsAndStepCountsAreHandledExactly) {
  write_csv(dir_ + "/test.csv", 40, 2);
  std::ofstream(dir_ + "/huge_label.csv") << "t0,t1,t2,t3,t4,t5,t6,t7,label\n"
                                          << "1,1,1,1,1,1,1,1,9223372036854775807\n";
  const std::string cfg = csv_config(dir_, dir_ + "/huge_label.csv");
  EXPECT_TERN_ERROR(run({"train", cfg, "--quiet"}, cmd_train), ErrorCode::kInvalidArgument,
                    "label 9223372036854775807 at " + dir_ +
                        "/huge_label.csv:2 (row 0 of a batch) is outside [0, 2)");
  write_csv(dir_ + "/train.csv", 64, 1);
  EXPECT_EQ(
      run({"train", csv_config(dir_, dir_ + "/train.csv"), "--quiet", "--set",
           "training.steps_per_epoch=9223372036854775807", "--metrics-json", dir_ + "/m.json"},
          cmd_train),
      0);
  EXPECT_NE(io::read_file(dir_ + "/m.json").find("\"epochs\": 2"), std::string::npos);
}

// F12: a read-only output.dir was found after 30 epochs, when the weights were saved. A read-only
// tmpfs mounted over the folder (root only; skipped where mounting is not permitted).
TEST_F(BadInputCommand, AReadOnlyOutputDirFailsBeforeTraining) {
  const std::string out = dir_ + "/run";
  fs::create_directories(out);
  if (::mount("tmpfs", out.c_str(), "tmpfs", MS_RDONLY, "size=64k") != 0) {
    GTEST_SKIP() << "cannot mount a read-only tmpfs here: " << std::strerror(errno);
  }
  ::testing::internal::CaptureStdout();
  std::string error;
  try {
    run({"train", config_}, cmd_train);
  } catch (const Error& e) {
    error = e.what();
  }
  const std::string printed = ::testing::internal::GetCapturedStdout();
  ::umount(out.c_str());
  EXPECT_NE(error.find("output.dir '" + out + "' is not writable: Read-only file system"),
            std::string::npos)
      << error;
  EXPECT_EQ(printed.find("Epoch 1/"), std::string::npos) << "it trained first:\n" << printed;
}

}  // namespace
}  // namespace tern::tools
