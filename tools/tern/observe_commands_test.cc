// `tern logs` (docs/formats.md event vectors read back), `tern ckpt inspect`, `tern profile` (trace
// JSON and ranking), `tern train --resume` refusing a changed config, and the config keys of the
// observability callbacks.
#include <gtest/gtest.h>

#include <unistd.h>
#include <regex>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "tern/base/strings.h"
#include "tern/base/version.h"
#include "tern/format/tfrecord_frame.h"
#include "tern/io/atomic_file.h"
#include "tern/io/event_file.h"
#include "tern/io/hparams_plugin.h"
#include "tests/support/idx_writer.h"
#include "tests/support/random_tensor.h"
#include "tools/tern/commands.h"

namespace tern::tools {
namespace {

using ::tern::testing::write_idx_u8;

namespace fs = std::filesystem;

std::string unhex(const std::string& h) {
  std::string out, digits;
  for (char c : h) {
    if (c != ' ') digits += c;
  }
  for (size_t i = 0; i + 1 < digits.size(); i += 2)
    out += static_cast<char>(std::stoi(digits.substr(i, 2), nullptr, 16));
  return out;
}

int run(std::vector<std::string> args, int (*cmd)(int, char**)) {
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  return cmd(static_cast<int>(argv.size()), argv.data());
}

std::string captured(std::vector<std::string> args, int (*cmd)(int, char**), int* rc) {
  ::testing::internal::CaptureStdout();
  *rc = run(std::move(args), cmd);
  return ::testing::internal::GetCapturedStdout();
}

class ObserveCommands : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "/tern_observe_commands_" + std::to_string(::getpid());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    std::vector<uint8_t> images(96 * 16), labels(96);
    for (size_t i = 0; i < labels.size(); ++i) {
      labels[i] = static_cast<uint8_t>(i % 2);
      for (size_t p = 0; p < 16; ++p)
        images[i * 16 + p] = static_cast<uint8_t>((p < 8) == (i % 2) ? 200 : 30 + p);
    }
    for (const char* split : {"train", "test"}) {
      write_idx_u8(dir_ + "/" + split + "-images.idx", {96, 4, 4}, images);
      write_idx_u8(dir_ + "/" + split + "-labels.idx", {96}, labels);
    }
    config_ = dir_ + "/c.toml";
    std::ofstream(config_) << "[model]\nname = \"mlp\"\n[model.args]\nunits = [8]\n"
                           << "[data]\ndataset = \"idx\"\nnum_classes = 2\n"
                           << "train_images = \"" << dir_ << "/train-images.idx\"\n"
                           << "train_labels = \"" << dir_ << "/train-labels.idx\"\n"
                           << "test_images = \"" << dir_ << "/test-images.idx\"\n"
                           << "test_labels = \"" << dir_ << "/test-labels.idx\"\n"
                           << "[training]\nepochs = 2\nbatch_size = 16\ndeterministic = true\n"
                           << "[callbacks.checkpoint]\nsave_freq = \"epoch\"\n"
                           << "[callbacks.tensorboard]\nupdate_freq = 3\n"
                           << "[output]\ndir = \"" << dir_ << "/run\"\n";
  }
  void TearDown() override {
    if (!HasFailure()) fs::remove_all(dir_);
  }
  std::string dir_, config_;
};

TEST_F(ObserveCommands, LogsPrintsTheFormatsVectors) {
  std::string path = dir_ + "/events.out.tfevents.0000000001.vectors";
  std::string first =
      unhex("09 00 00 00 00 00 00 f0 3f 1a 0d 62 72 61 69 6e 2e 45 76 65 6e 74 3a 32");
  std::string loss =
      unhex("09 00 00 00 00 00 00 f0 3f 10 03 2a 0d 0a 0b 0a 04 6c 6f 73 73 15 00 00 00 3f");
  io::write_file_atomically(path, format::tfrecord_frame(first) + format::tfrecord_frame(loss));
  int rc = -1;
  std::string out = captured({"logs", path}, cmd_logs, &rc);
  EXPECT_EQ(rc, 0);
  EXPECT_NE(out.find("2 events, file_version brain.Event:2"), std::string::npos) << out;
  EXPECT_NE(out.find("step      3  1.000  loss"), std::string::npos) << out;
  EXPECT_NE(out.find(" 0.5\n"), std::string::npos) << out;
  // A corrupt file is a DataLoss naming it.
  std::string bad = format::tfrecord_frame(first) + format::tfrecord_frame(loss);
  bad[bad.size() - 6] ^= 1;
  io::write_file_atomically(path, bad);
  EXPECT_TERN_ERROR(run({"logs", path}, cmd_logs), ErrorCode::kDataLoss, path);
}

TEST_F(ObserveCommands, LogsPrintsHParamsExperimentAndSessions) {
  io::write_hparams_experiment(dir_ + "/sweep",
                               {{.name = "lr", .interval = std::pair{0.001, 0.1}},
                                {.name = "aug",
                                 .type = io::HParamInfo::Type::kString,
                                 .discrete_strings = {"none", "flip"}}},
                               {{.tag = "val_accuracy"}}, 1.0);
  io::HParamsSession s;
  s.hparams = {{"lr", 0.01}, {"aug", std::string("flip")}, {"nesterov", true}};
  s.status = io::HParamsSession::Status::kFailure;
  s.metrics = {{"val_accuracy", 2, 0.5}};
  io::write_hparams_session(dir_ + "/sweep/trial-0", s);
  int rc = -1;
  std::string out = captured({"logs", dir_ + "/sweep"}, cmd_logs, &rc);
  EXPECT_EQ(rc, 0);
  EXPECT_NE(out.find("_hparams_/experiment          hparams experiment: lr float [0.001,0.1]; "
                     "aug string {none,flip}; metrics: val_accuracy\n"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("hparams session start: aug=\"flip\" lr=0.01 nesterov=true\n"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("val_accuracy                  0.5\n"), std::string::npos) << out;
  EXPECT_NE(out.find("_hparams_/session_end_info    hparams session end: failure\n"),
            std::string::npos)
      << out;
}

// Bad-input report F20: tags and texts from an event file were printed raw: ESC[2J cleared the
// screen, newlines faked output lines.
TEST_F(ObserveCommands, LogsEscapeWhatTheTerminalWouldRun) {
  std::string path = dir_ + "/events.out.tfevents.0000000001.hostile";
  io::Event first{.wall_time = 1.0, .file_version = "brain.Event:2\x1b]0;title\x07"};
  io::Event scalar{.wall_time = 2.0, .step = 3, .has_summary = true};
  scalar.summary.push_back(
      {.tag = "\x1b[2Jloss\nstep 9  fake", .kind = io::SummaryKind::kScalar, .scalar = 0.5});
  scalar.summary.push_back(
      {.tag = "note", .kind = io::SummaryKind::kText, .text = "red\x1b[31m\x9b"});
  io::write_file_atomically(path, format::tfrecord_frame(io::encode_event(first)) +
                                      format::tfrecord_frame(io::encode_event(scalar)));
  int rc = -1;
  std::string out = captured({"logs", path}, cmd_logs, &rc);
  EXPECT_EQ(rc, 0);
  EXPECT_EQ(out.find('\x1b'), std::string::npos) << out;
  EXPECT_EQ(out.find('\x07'), std::string::npos) << out;
  EXPECT_NE(out.find("\\x1b[2Jloss\\nstep 9  fake"), std::string::npos) << out;
  EXPECT_NE(out.find("text \"red\\x1b[31m"), std::string::npos) << out;
  EXPECT_EQ(split_lines(out).size(), 3u) << out;  // the file line and one line per value
}

TEST_F(ObserveCommands, TrainWritesLogsAndCheckpointsThatToolsRead) {
  int rc = -1;
  std::string m = dir_ + "/m.json";
  ASSERT_EQ(run({"train", config_, "--quiet", "--metrics-json", m}, cmd_train), 0);
  nlohmann::json j = nlohmann::json::parse(io::read_file(m));
  for (const char* k :
       {"epoch_seconds_min", "epoch_seconds_mean", "epoch_seconds_max", "steps_per_second",
        "samples_per_second", "input_wait_seconds", "compute_seconds"}) {
    EXPECT_TRUE(j["monitor"].contains(k)) << k;
  }
  EXPECT_EQ(j["monitor"]["steps"], 12);
  EXPECT_EQ(j["tern_version"], tern::version());

  std::string out = captured({"logs", dir_ + "/run/logs", "--tag", "epoch_loss"}, cmd_logs, &rc);
  EXPECT_EQ(rc, 0);
  EXPECT_NE(out.find("/train/events.out.tfevents."), std::string::npos) << out;
  EXPECT_EQ(out.find("/validation/"), std::string::npos) << out;  // no validation data, no file
  size_t lines = 0;
  for (size_t p = out.find("epoch_loss"); p != std::string::npos; p = out.find("epoch_loss", p + 1))
    ++lines;
  EXPECT_EQ(lines, 2u) << out;

  out = captured({"ckpt", "inspect", dir_ + "/run/checkpoints"}, cmd_ckpt, &rc);
  EXPECT_EQ(rc, 0);
  EXPECT_NE(out.find("2 checkpoints"), std::string::npos) << out;
  EXPECT_NE(out.find("global step 12, epoch 1 (complete)"), std::string::npos) << out;
  // Layer names are numbered per process (dense, dense_1, ..., dense_12): other tests in this
  // binary may have built models first, so only a kernel line with the shape is fixed (its
  // padding follows the name's length).
  bool kernel_line = false;
  for (const std::string& line : split_lines(out)) {
    kernel_line = kernel_line || (line.find("/kernel ") != std::string::npos &&
                                  line.find(" f32[16, 8]") != std::string::npos);
  }
  EXPECT_TRUE(kernel_line) << out;
  // The last checkpoint holds the final weights: the same weights_sha256 as metrics.json.
  EXPECT_NE(out.find("weights_sha256 " + j["weights_sha256"].get<std::string>()), std::string::npos)
      << out;

  // Resuming at the end trains nothing more and gives the same weights.
  std::string m2 = dir_ + "/m2.json";
  ASSERT_EQ(run({"train", config_, "--quiet", "--resume", "--metrics-json", m2}, cmd_train), 0);
  nlohmann::json j2 = nlohmann::json::parse(io::read_file(m2));
  EXPECT_EQ(j2["epochs"], 0);
  EXPECT_EQ(j2["weights_sha256"], j["weights_sha256"]);
  // A config that trains differently is refused; [output] and [callbacks] do not count.
  EXPECT_TERN_ERROR(
      run({"train", config_, "--quiet", "--resume", "--set", "optimizer.learning_rate=0.5"},
          cmd_train),
      ErrorCode::kFailedPrecondition, "different config");
  EXPECT_EQ(run({"train", config_, "--quiet", "--resume", "--set",
                 "callbacks.tensorboard.update_freq=5", "--metrics-json", m2},
                cmd_train),
            0);
}

TEST_F(ObserveCommands, ProfileWritesATraceAndRanksOps) {
  std::string trace = dir_ + "/trace.json";
  int rc = -1;
  std::string out = captured(
      {"profile", config_, "--steps", "4", "--warmup", "1", "--trace", trace}, cmd_profile, &rc);
  EXPECT_EQ(rc, 0);
  EXPECT_NE(out.find("4 train steps"), std::string::npos) << out;
  EXPECT_NE(out.find("step split: input wait"), std::string::npos) << out;
  EXPECT_NE(out.find("optimizer"), std::string::npos) << out;
  EXPECT_NE(out.find("matmul"), std::string::npos) << out;
  nlohmann::json doc = nlohmann::json::parse(io::read_file(trace));
  int ops = 0;
  for (const auto& e : doc["traceEvents"]) {
    if (e["ph"] == "X" && e["cat"] == "op") ++ops;
  }
  EXPECT_GT(ops, 4 * 5);
}

}  // namespace
}  // namespace tern::tools
