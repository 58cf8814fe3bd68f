// Durable training state, end to end with the built `tern` binary: a deterministic training run
// that checkpoints every 2 steps is killed with SIGKILL at random moments (at least 20 times, some
// of them while a checkpoint is being written). After every kill the newest checkpoint on disk
// must validate (`tern ckpt inspect`), and `tern train --resume` must finish with the same
// weights_sha256 as an uninterrupted run. Also: two deterministic runs agree, and the event files
// of the killed runs still read back (`tern logs`).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <thread>

#include "tests/support/idx_writer.h"

extern char** environ;

namespace tern {
namespace {

using ::tern::testing::write_quadrant_dataset;

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// Starts `tern args...` with stdout and stderr appended to `log`.
pid_t spawn_tern(const std::vector<std::string>& args, const std::string& log) {
  std::vector<std::string> all = {TERN_TOOL_PATH};
  all.insert(all.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : all) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  pid_t pid = -1;
  int rc = posix_spawn(&pid, argv[0], &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  return rc == 0 ? pid : -1;
}

int wait_exit(pid_t pid) {
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

int run_tern(const std::vector<std::string>& args, const std::string& log) {
  pid_t pid = spawn_tern(args, log);
  return pid < 0 ? -1 : wait_exit(pid);
}

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string sha_of(const std::string& metrics) {
  return nlohmann::json::parse(read_text(metrics))["weights_sha256"].get<std::string>();
}

class CrashResume : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "/tern_crash_resume_" + std::to_string(::getpid());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    write_quadrant_dataset(dir_, "train", 384, 1);
    write_quadrant_dataset(dir_, "test", 64, 2);
    config_ = dir_ + "/crash.toml";
    std::ofstream(config_)
        << "[model]\nname = \"mlp\"\n[model.args]\nunits = [32]\ndropout = 0.1\n"
        << "[data]\ndataset = \"idx\"\nnum_classes = 4\nshuffle_buffer = 128\nprefetch = 2\n"
        << "validation_split = 0.25\n"
        << "train_images = \"" << dir_ << "/train-images.idx\"\n"
        << "train_labels = \"" << dir_ << "/train-labels.idx\"\n"
        << "test_images = \"" << dir_ << "/test-images.idx\"\n"
        << "test_labels = \"" << dir_ << "/test-labels.idx\"\n"
        << "[optimizer]\nlearning_rate = 0.01\n"
        << "[training]\nepochs = 4\nbatch_size = 12\ndeterministic = true\nthreads = 1\n"
        << "[callbacks.checkpoint]\nsave_freq = 2\nkeep_last = 2\n"
        << "[callbacks.tensorboard]\nupdate_freq = 4\n";
    log_ = dir_ + "/tern.log";
  }
  void TearDown() override {
    if (!HasFailure()) fs::remove_all(dir_);
  }
  std::vector<std::string> train_args(const std::string& out, bool resume) const {
    std::vector<std::string> a = {"train",
                                  config_,
                                  "--quiet",
                                  "--set",
                                  "output.dir=\"" + out + "\"",
                                  "--metrics-json",
                                  out + "/metrics.json"};
    if (resume) a.push_back("--resume");
    return a;
  }
  std::string dir_, config_, log_;
};

TEST_F(CrashResume, KilledRunsResumeToTheUninterruptedWeights) {
  // Reference: an uninterrupted run, and a second one (determinism).
  Clock::time_point t0 = Clock::now();
  ASSERT_EQ(run_tern(train_args(dir_ + "/ref", false), log_), 0) << read_text(log_);
  double full = std::chrono::duration<double>(Clock::now() - t0).count();
  std::string expected = sha_of(dir_ + "/ref/metrics.json");
  ASSERT_EQ(run_tern(train_args(dir_ + "/ref2", false), log_), 0) << read_text(log_);
  EXPECT_EQ(sha_of(dir_ + "/ref2/metrics.json"), expected) << "two deterministic runs differ";
  // Start-up cost: a run of one step.
  t0 = Clock::now();
  std::vector<std::string> one = train_args(dir_ + "/one", false);
  one.insert(one.end(), {"--set", "training.steps_per_epoch=1", "--set", "training.epochs=1"});
  ASSERT_EQ(run_tern(one, log_), 0) << read_text(log_);
  double startup = std::chrono::duration<double>(Clock::now() - t0).count();
  double work = std::max(full - startup, 0.05);

  std::mt19937 rng(20240601);
  // Kill after the start-up plus a random slice of about 1/12 of the training work, so that about
  // 20+ kills fit in one run; runs that finish anyway are checked and started over.
  std::uniform_real_distribution<double> extra(0.0, work / 6);
  int kills = 0, during_save = 0, finished = 0, attempt = 0;
  std::string out = dir_ + "/crash0";
  while (kills < 20 || (during_save == 0 && kills < 60)) {
    pid_t pid = spawn_tern(train_args(out, true), log_);
    ASSERT_GT(pid, 0);
    double delay = 0.6 * startup + extra(rng);
    std::this_thread::sleep_for(std::chrono::duration<double>(delay));
    int status = 0;
    if (waitpid(pid, &status, WNOHANG) == pid) {
      // It finished before the kill: the resumed result must match, then start over.
      ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << read_text(log_);
      EXPECT_EQ(sha_of(out + "/metrics.json"), expected) << "finished run " << finished;
      ++finished;
      out = dir_ + "/crash" + std::to_string(++attempt);
      continue;
    }
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    ++kills;
    std::string ckpts = out + "/checkpoints";
    bool saving = false;
    if (fs::exists(ckpts)) {
      for (const auto& e : fs::directory_iterator(ckpts))
        saving |= e.path().filename().string().rfind(".tmp-", 0) == 0;
    }
    during_save += saving;
    bool any =
        fs::exists(ckpts) &&
        std::any_of(fs::directory_iterator(ckpts), fs::directory_iterator{}, [](const auto& e) {
          return e.path().filename().string().rfind("ckpt-", 0) == 0;
        });
    if (any) {
      ASSERT_EQ(run_tern({"ckpt", "inspect", ckpts}, log_), 0)
          << "kill " << kills << (saving ? " (during a save)" : "")
          << ": the newest checkpoint does not load\n"
          << read_text(log_);
    }
  }
  // Finish the interrupted run.
  ASSERT_EQ(run_tern(train_args(out, true), log_), 0) << read_text(log_);
  EXPECT_EQ(sha_of(out + "/metrics.json"), expected);
  // Event files of killed writers end at most in a cut-off record; they still read back.
  EXPECT_EQ(run_tern({"logs", out + "/logs"}, log_), 0) << read_text(log_);
  std::cout << "[ crash ] " << kills << " kills (" << during_save << " during a save), " << finished
            << " runs finished between kills; full run " << full << " s, start-up " << startup
            << " s\n";
  EXPECT_GE(kills, 20);
  EXPECT_GE(during_save, 1);
}

}  // namespace
}  // namespace tern
