// Graceful interrupts, end to end with the built `tern`: SIGINT and SIGTERM at random moments of
// a deterministic run stop it after the current step with exit status 130 / 143, print where the
// checkpoint went, and `tern train --resume` -- interrupted again and again -- finishes with the
// uninterrupted run's weights_sha256. Without [callbacks.checkpoint] the weights are saved to
// output.dir instead; a second SIGINT quits at once. (tests/dist/train_faults_test.py has the
// data-parallel case under mpirun.)
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <thread>

#include "tests/support/child_process.h"
#include "tests/support/idx_writer.h"

namespace tern {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using ::tern::testing::read_log;
using ::tern::testing::spawn_logged;

struct Exit {
  bool exited = false;  // false: ended by a signal (it came before or after fit's handlers)
  int code = -1;        // the exit status, or the signal
};

Exit wait_exit(pid_t pid) {
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (WIFEXITED(status)) return {true, WEXITSTATUS(status)};
  return {false, WIFSIGNALED(status) ? WTERMSIG(status) : -1};
}

class Interrupt : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "/tern_interrupt_" + std::to_string(::getpid());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    ::tern::testing::write_quadrant_dataset(dir_, "train", 480, 1);
    ::tern::testing::write_quadrant_dataset(dir_, "test", 64, 2);
    config_ = write_config("run.toml", "[callbacks.checkpoint]\nsave_freq = 7\nkeep_last = 2\n");
    log_ = dir_ + "/tern.log";
  }
  void TearDown() override {
    if (!HasFailure()) fs::remove_all(dir_);
  }
  std::string write_config(const std::string& name, const std::string& extra) const {
    const std::string path = dir_ + "/" + name;
    std::ofstream(path)
        << "[model]\nname = \"mlp\"\n[model.args]\nunits = [64, 32]\ndropout = 0.1\n"
        << "[data]\ndataset = \"idx\"\nnum_classes = 4\nshuffle_buffer = 128\n"
        << "validation_split = 0.2\n"
        << "train_images = \"" << dir_ << "/train-images.idx\"\n"
        << "train_labels = \"" << dir_ << "/train-labels.idx\"\n"
        << "test_images = \"" << dir_ << "/test-images.idx\"\n"
        << "test_labels = \"" << dir_ << "/test-labels.idx\"\n"
        << "[optimizer]\nname = \"adam\"\nlearning_rate = 0.003\n"
        << "[training]\nepochs = 8\nbatch_size = 8\ndeterministic = true\n"
        << "threads = 1\n"
        << extra;
    return path;
  }
  std::vector<std::string> train_args(const std::string& config, const std::string& out,
                                      bool resume) const {
    std::vector<std::string> a = {TERN_TOOL_PATH,   "train",
                                  config,           "--quiet",
                                  "--set",          "output.dir=\"" + out + "\"",
                                  "--metrics-json", out + "/metrics.json"};
    if (resume) a.push_back("--resume");
    return a;
  }
  std::string sha_of(const std::string& out) const {
    std::ifstream in(out + "/metrics.json");
    return nlohmann::json::parse(in)["weights_sha256"].get<std::string>();
  }
  std::string dir_, config_, log_;
};

TEST_F(Interrupt, SignalsAtRandomMomentsThenResumeGiveTheUninterruptedWeights) {
  Clock::time_point t0 = Clock::now();
  pid_t pid = spawn_logged(train_args(config_, dir_ + "/ref", false), {}, log_);
  ASSERT_EQ(wait_exit(pid).code, 0) << read_log(log_);
  const double full = std::chrono::duration<double>(Clock::now() - t0).count();
  const std::string expected = sha_of(dir_ + "/ref");
  // Start-up cost: a run of one step.
  t0 = Clock::now();
  std::vector<std::string> one = train_args(config_, dir_ + "/one", false);
  one.insert(one.end(), {"--set", "training.steps_per_epoch=1", "--set", "training.epochs=1"});
  pid = spawn_logged(one, {}, log_);
  ASSERT_EQ(wait_exit(pid).code, 0) << read_log(log_);
  const double startup = std::chrono::duration<double>(Clock::now() - t0).count();
  const double work = std::max(full - startup, 0.05);

  // Signal after most of the start-up plus a random slice of the training work; a run that
  // finishes first is checked and a fresh chain started.
  std::mt19937 rng(20261126);
  std::uniform_real_distribution<double> extra(0.0, work / 3);
  int graceful = 0, early = 0, finished = 0, chain = 0;
  std::string out = dir_ + "/run0";
  for (int attempt = 0; graceful < 6; ++attempt) {
    ASSERT_LT(attempt, 60) << graceful << " graceful stops in 60 runs";
    fs::remove(log_);
    pid = spawn_logged(train_args(config_, out, true), {}, log_);
    ASSERT_GT(pid, 0);
    const int sig = attempt % 2 ? SIGTERM : SIGINT;
    std::this_thread::sleep_for(std::chrono::duration<double>(0.8 * startup + extra(rng)));
    ::kill(pid, sig);
    const Exit e = wait_exit(pid);
    const std::string log = read_log(log_);
    if (e.exited && e.code == 0) {
      // Finished before the signal (or it came after fit, which ignores it).
      EXPECT_EQ(sha_of(out), expected) << "chain " << chain;
      ++finished;
      out = dir_ + "/run" + std::to_string(++chain);
      continue;
    }
    if (!e.exited) {
      ASSERT_EQ(e.code, sig) << log;  // before or after fit's handlers: the default action
      ++early;
      continue;
    }
    ASSERT_EQ(e.code, 128 + sig) << log;
    EXPECT_NE(log.find(sig == SIGINT ? "interrupted by SIGINT after step "
                                     : "interrupted by SIGTERM after step "),
              std::string::npos)
        << log;
    const size_t at = log.find("checkpoint: " + out + "/checkpoints/ckpt-");
    ASSERT_NE(at, std::string::npos) << log;
    const std::string ckpt = log.substr(at + 12, log.find('\n', at) - at - 12);
    EXPECT_TRUE(fs::exists(ckpt + "/manifest.json")) << ckpt;
    EXPECT_NE(log.find("continue exactly with: tern train " + config_ + " --resume"),
              std::string::npos)
        << log;
    ++graceful;
  }
  // Finish the last chain.
  fs::remove(log_);
  pid = spawn_logged(train_args(config_, out, true), {}, log_);
  ASSERT_EQ(wait_exit(pid).code, 0) << read_log(log_);
  EXPECT_EQ(sha_of(out), expected) << "resumed after " << graceful << " stops";
  std::cout << "[ interrupt ] " << graceful << " graceful stops, " << early << " outside fit, "
            << finished << " runs finished between them; full run " << full << " s, start-up "
            << startup << " s\n";
}

// Polls `log` until it contains `text` (true) or `pid` ended or 60 s passed (false).
bool wait_for_text(const std::string& log, const std::string& text, pid_t pid) {
  const Clock::time_point deadline = Clock::now() + std::chrono::seconds(60);
  while (Clock::now() < deadline) {
    if (read_log(log).find(text) != std::string::npos) return true;
    if (::waitpid(pid, nullptr, WNOHANG) == pid) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return false;
}

TEST_F(Interrupt, WithoutCheckpointsTheWeightsAreSavedAndASecondSigintQuitsAtOnce) {
  // Wide layers: steps of tens of milliseconds, so a signal lands inside one.
  const std::string plain = write_config("plain.toml", "");
  const std::vector<std::string> slow = {"--set", "model.args.units=[2048, 2048]", "--set",
                                         "training.batch_size=64"};
  const std::string out = dir_ + "/plain";
  std::vector<std::string> args = train_args(plain, out, false);
  args.erase(std::find(args.begin(), args.end(), "--quiet"));  // the banner says fit is near
  args.insert(args.end(), slow.begin(), slow.end());
  pid_t pid = spawn_logged(args, {}, log_);
  ASSERT_TRUE(wait_for_text(log_, "tern train " + plain, pid)) << read_log(log_);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  ::kill(pid, SIGTERM);
  Exit e = wait_exit(pid);
  std::string log = read_log(log_);
  ASSERT_TRUE(e.exited) << log;
  EXPECT_EQ(e.code, 143) << log;
  EXPECT_NE(log.find("interrupted by SIGTERM after step "), std::string::npos) << log;
  EXPECT_NE(log.find("weights: " + out + "/weights.safetensors (no [callbacks.checkpoint]"),
            std::string::npos)
      << log;
  EXPECT_TRUE(fs::exists(out + "/weights.safetensors"));
  EXPECT_FALSE(fs::exists(out + "/metrics.json"));  // the run did not finish

  // A second Ctrl-C while the first waits for the step to end: out at once, nothing saved.
  fs::remove(log_);
  args = train_args(config_, dir_ + "/twice", false);
  args.erase(std::find(args.begin(), args.end(), "--quiet"));
  args.insert(args.end(), slow.begin(), slow.end());
  pid = spawn_logged(args, {}, log_);
  ASSERT_TRUE(wait_for_text(log_, "tern train " + config_, pid)) << read_log(log_);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  ::kill(pid, SIGINT);
  ASSERT_TRUE(wait_for_text(log_, "SIGINT: stopping after this step", pid)) << read_log(log_);
  ::kill(pid, SIGINT);
  e = wait_exit(pid);
  log = read_log(log_);
  ASSERT_TRUE(e.exited) << log;
  EXPECT_EQ(e.code, 130) << log;
  EXPECT_NE(log.find("second SIGINT: quitting without saving"), std::string::npos) << log;
  EXPECT_EQ(log.find("interrupted by SIGINT after step"), std::string::npos) << log;
}

}  // namespace
}  // namespace tern
