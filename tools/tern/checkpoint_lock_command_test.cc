// Two `tern train` processes on one checkpoint directory (bad-input report F20): the second died
// mid-run with "cannot create '.../.tmp-ckpt-...'" because the first swept its temporary
// checkpoint. Now the first holds a lock on the directory for its run; the second exits 1 at
// start-up naming the directory and the first's pid, and the first finishes with every checkpoint
// intact. The lock is flock's: a run killed with SIGKILL leaves a lock file that blocks nothing.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/file.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "tern/base/error.h"
#include "tern/train/checkpoint.h"
#include "tern/train/checkpoint_lock.h"
#include "tests/support/child_process.h"
#include "tests/support/idx_writer.h"

namespace tern::tools {
namespace {

namespace fs = std::filesystem;
using ::tern::testing::read_log;
using ::tern::testing::spawn_logged;
using ::tern::testing::wait_bounded;

class CheckpointLock : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = str_cat(::testing::TempDir(), "/tern_ckpt_lock_", ::getpid());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    ::tern::testing::write_quadrant_dataset(dir_, "train", 512, 1);
    ::tern::testing::write_quadrant_dataset(dir_, "test", 64, 2);
    config_ = dir_ + "/tiny.toml";
    std::ofstream(config_) << "[model]\nname = \"mlp\"\n[model.args]\nunits = [32]\n"
                           << "[data]\ndataset = \"idx\"\nnum_classes = 4\n"
                           << "train_images = \"" << dir_ << "/train-images.idx\"\n"
                           << "train_labels = \"" << dir_ << "/train-labels.idx\"\n"
                           << "test_images = \"" << dir_ << "/test-images.idx\"\n"
                           << "test_labels = \"" << dir_ << "/test-labels.idx\"\n"
                           << "[training]\nepochs = 4\nbatch_size = 32\nthreads = 1\n"
                           << "[output]\ndir = \"" << dir_ << "/run\"\n"
                           << "[callbacks.checkpoint]\nsave_freq = 4\nkeep_last = 0\n";
  }
  void TearDown() override {
    if (!HasFailure()) fs::remove_all(dir_);
  }
  std::string ckpt_dir() const { return dir_ + "/run/checkpoints"; }
  std::string lock_file() const { return ckpt_dir() + "/" + train::kCheckpointLockFile; }

  // Waits until the lock file names `pid` (the run holds the lock); false after 60 s.
  bool wait_for_lock(pid_t pid) const {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (std::chrono::steady_clock::now() < deadline) {
      if (read_log(lock_file()) == std::to_string(pid) + "\n") return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
  }

  std::string dir_, config_;
};

TEST_F(CheckpointLock, ASecondRunOnTheDirectoryFailsAtStartAndTheFirstFinishes) {
  const std::string log1 = dir_ + "/first.log", log2 = dir_ + "/second.log";
  const pid_t first = spawn_logged({TERN_TOOL_PATH, "train", config_}, {}, log1);
  ASSERT_GT(first, 0);
  ASSERT_TRUE(wait_for_lock(first)) << read_log(log1);
  // Held still while the second run starts: the overlap does not depend on timing.
  ASSERT_EQ(::kill(first, SIGSTOP), 0);
  const pid_t second = spawn_logged({TERN_TOOL_PATH, "train", config_}, {}, log2);
  const int second_status = wait_bounded(second, std::chrono::seconds(120));
  ASSERT_EQ(::kill(first, SIGCONT), 0);
  const std::string err = read_log(log2);
  EXPECT_EQ(second_status, 1) << err;
  EXPECT_NE(err.find("checkpoint directory '" + ckpt_dir() + "' is in use by another run (pid " +
                     std::to_string(first) + ","),
            std::string::npos)
      << err;
  EXPECT_EQ(err.find("Epoch 1/"), std::string::npos) << "the second run trained:\n" << err;
  EXPECT_EQ(err.find(".tmp-ckpt"), std::string::npos) << err;

  ASSERT_EQ(wait_bounded(first, std::chrono::seconds(300)), 0) << read_log(log1);
  const std::vector<std::string> all = train::list_checkpoints(ckpt_dir());
  EXPECT_EQ(all.size(), 16u) << "4 epochs of 16 steps, one every 4";
  for (const std::string& c : all) EXPECT_NO_THROW(train::read_checkpoint(c)) << c;
  for (const auto& e : fs::directory_iterator(ckpt_dir())) {
    const std::string name = e.path().filename().string();
    EXPECT_TRUE(name.rfind("ckpt-", 0) == 0 || name == train::kCheckpointLockFile) << name;
  }
}

// kill -9 leaves the lock file with the dead run's pid; flock's lock went with the process, so
// --resume continues at once.
TEST_F(CheckpointLock, ALockFileOfAKilledRunDoesNotBlock) {
  const std::string log1 = dir_ + "/killed.log", log2 = dir_ + "/resumed.log";
  const pid_t first = spawn_logged({TERN_TOOL_PATH, "train", config_}, {}, log1);
  ASSERT_GT(first, 0);
  ASSERT_TRUE(wait_for_lock(first)) << read_log(log1);
  ASSERT_EQ(::kill(first, SIGKILL), 0);
  EXPECT_EQ(wait_bounded(first, std::chrono::seconds(30)), 128 + SIGKILL);
  EXPECT_EQ(read_log(lock_file()), std::to_string(first) + "\n") << "the stale file stays";
  const pid_t second = spawn_logged({TERN_TOOL_PATH, "train", config_, "--resume"}, {}, log2);
  EXPECT_EQ(wait_bounded(second, std::chrono::seconds(300)), 0) << read_log(log2);
  EXPECT_EQ(read_log(lock_file()), std::to_string(second) + "\n");
}

// Whether another open file description of `path` could take the lock now (what a second process
// does: it never shares this process's).
bool lock_is_free(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) return false;
  const bool free = ::flock(fd, LOCK_EX | LOCK_NB) == 0;
  ::close(fd);
  return free;
}

// In one process the lock is shared (ModelCheckpoint, save_checkpoint and config::Trainer take
// the same directory's, under any spelling of its path); it excludes everyone else until the last
// holder lets go.
TEST(CheckpointDirLock, SharedInTheProcessExclusiveOutside) {
  const std::string root = str_cat(::testing::TempDir(), "/tern_lock_unit_", ::getpid());
  const std::string dir = root + "/ck";
  fs::remove_all(root);
  const std::string file = dir + "/" + train::kCheckpointLockFile;
  {
    auto a = train::CheckpointDirLock::acquire(dir);
    auto b = train::CheckpointDirLock::acquire(root + "/./ck/");
    EXPECT_EQ(a, b);
    EXPECT_TRUE(train::CheckpointDirLock::held(dir));
    EXPECT_EQ(read_log(file), std::to_string(::getpid()) + "\n");
    EXPECT_FALSE(lock_is_free(file));
    a.reset();
    EXPECT_FALSE(lock_is_free(file)) << "b still holds it";
  }
  EXPECT_FALSE(train::CheckpointDirLock::held(dir));
  EXPECT_TRUE(lock_is_free(file));
  fs::remove_all(root);
}

}  // namespace
}  // namespace tern::tools
