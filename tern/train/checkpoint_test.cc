// Checkpoints: round trip, exact resume in the middle of an epoch (bitwise-equal weights to an
// uninterrupted run), retention, save_best_only, BackupAndRestore, and corrupt checkpoints, each
// of which must be a DataLoss error naming the file.
#include "tern/train/checkpoint.h"

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>

#include "tern/base/sha256.h"
#include "tern/base/version.h"
#include "tern/io/atomic_file.h"
#include "tern/train/model_checkpoint.h"
#include "tern/train/observe_test_util.h"

namespace tern::train {
namespace {

using namespace tern::testing_observe;

struct Crash : std::runtime_error {
  Crash() : std::runtime_error("simulated crash") {}
};

// Throws after global batch `at`, like a process dying between steps.
class CrashAt : public Callback {
 public:
  explicit CrashAt(int64_t at) : at_(at) {}
  void on_train_batch_end(int64_t, Logs&) override {
    if (model()->training_state()->progress.global_step == at_) throw Crash();
  }

 private:
  int64_t at_;
};

nn::FitOptions fit_options(int epochs) {
  nn::FitOptions o;
  o.epochs = epochs;
  o.verbose = 0;
  return o;
}

class CheckpointTest : public ::testing::Test {
 protected:
  void SetUp() override { make_blobs(200, 5, &x_, &y_); }
  Tensor x_, y_;
};

TEST_F(CheckpointTest, ResumeMidEpochGivesBitwiseEqualWeights) {
  auto reference = make_model();
  reference->fit(make_pipeline(x_, y_), fit_options(3));
  std::vector<Tensor> expected = weights_of(*reference);

  std::string dir = fresh_dir("resume");
  // 200 samples in batches of 24: 9 batches per epoch. Save every 4 batches, die after 21
  // (epoch 2, batch 3): the newest checkpoint is step 20, in the middle of epoch 2.
  {
    auto m = make_model();
    nn::FitOptions o = fit_options(3);
    o.callbacks = {
        std::make_shared<ModelCheckpoint>(ModelCheckpointOptions{.dir = dir, .save_freq = 4}),
        std::make_shared<CrashAt>(21)};
    EXPECT_THROW(m->fit(make_pipeline(x_, y_), o), Crash);
  }
  std::optional<std::string> latest = latest_checkpoint(dir);
  ASSERT_TRUE(latest);
  Checkpoint c = read_checkpoint(*latest);
  EXPECT_EQ(c.state.position.global_step, 20);
  EXPECT_EQ(c.state.position.epoch, 2);
  EXPECT_EQ(c.state.position.step_in_epoch, 2);
  EXPECT_FALSE(c.state.position.epoch_complete);
  EXPECT_EQ(c.state.optimizer_iterations, 20);
  EXPECT_EQ(c.state.optimizer_name, "Adam");
  EXPECT_FALSE(c.state.position.iterator_state.empty());
  EXPECT_EQ(c.weights.size(), 4u);
  EXPECT_GE(c.optimizer.size(), 8u);  // m and v for each weight

  auto resumed = make_model();
  restore_checkpoint(*resumed, c);
  History h = resumed->fit(make_pipeline(x_, y_), fit_options(3));
  EXPECT_EQ(h.epoch, (std::vector<int>{2}));
  EXPECT_EQ(h.stats.steps, 7);
  EXPECT_TRUE(bitwise_equal(weights_of(*resumed), expected));
}

TEST_F(CheckpointTest, BackupAndRestoreContinuesAndCleansUp) {
  auto reference = make_model();
  reference->fit(make_pipeline(x_, y_), fit_options(2));
  std::string dir = fresh_dir("backup") + "/backup";
  auto backup = [&] {
    return std::make_shared<BackupAndRestore>(
        BackupAndRestoreOptions{.backup_dir = dir, .save_freq = 3});
  };
  auto m = make_model();
  nn::FitOptions o = fit_options(2);
  o.callbacks = {backup(), std::make_shared<CrashAt>(13)};
  EXPECT_THROW(m->fit(make_pipeline(x_, y_), o), Crash);
  EXPECT_FALSE(list_checkpoints(dir).empty());
  // A new process: same model and data, same callback; fit continues from step 12.
  auto again = make_model();
  auto cb = backup();
  o.callbacks = {cb};
  History h = again->fit(make_pipeline(x_, y_), o);
  EXPECT_NE(cb->restored_from().find("ckpt-0000000012"), std::string::npos) << cb->restored_from();
  EXPECT_EQ(h.stats.steps, 6);
  EXPECT_TRUE(bitwise_equal(weights_of(*again), weights_of(*reference)));
  EXPECT_FALSE(std::filesystem::exists(dir));  // deleted after a finished run
}

TEST_F(CheckpointTest, KeepLastAndSaveBestOnly) {
  std::string dir = fresh_dir("keep");
  auto m = make_model();
  nn::FitOptions o = fit_options(2);
  auto cb = std::make_shared<ModelCheckpoint>(
      ModelCheckpointOptions{.dir = dir, .save_freq = 2, .keep_last = 3});
  o.callbacks = {cb};
  m->fit(make_pipeline(x_, y_), o);
  std::vector<std::string> all = list_checkpoints(dir);
  ASSERT_EQ(all.size(), 3u);
  EXPECT_NE(all.back().find("ckpt-0000000018"), std::string::npos);
  EXPECT_EQ(cb->last_saved(), all.back());
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    EXPECT_EQ(e.path().filename().string().rfind("ckpt-", 0), 0u) << "leftover " << e.path();
  }

  std::string best_dir = fresh_dir("best");
  auto b = make_model();
  o = fit_options(3);
  o.validation_data = data::from_tensor_slices({x_, y_})->batch(50);
  o.callbacks = {std::make_shared<ModelCheckpoint>(
      ModelCheckpointOptions{.dir = best_dir, .save_best_only = true, .monitor = "val_loss"})};
  History h = b->fit(make_pipeline(x_, y_), o);
  std::vector<std::string> best = list_checkpoints(best_dir);
  ASSERT_FALSE(best.empty());
  Checkpoint last = read_checkpoint(best.back());
  const std::vector<double>& val = h.at("val_loss");
  EXPECT_EQ(last.state.logs.at("val_loss"), *std::min_element(val.begin(), val.end()));
  EXPECT_TRUE(last.state.position.epoch_complete);
  EXPECT_TRUE(last.state.position.iterator_state.empty());
}

// --- corrupt checkpoints ---

class CorruptCheckpointTest : public CheckpointTest {
 protected:
  void SetUp() override {
    CheckpointTest::SetUp();
    dir_ = fresh_dir("corrupt");
    auto m = make_model();
    nn::FitOptions o = fit_options(1);
    o.steps_per_epoch = 3;
    o.callbacks = {
        std::make_shared<ModelCheckpoint>(ModelCheckpointOptions{.dir = dir_, .save_freq = 2})};
    m->fit(make_pipeline(x_, y_), o);
    ckpt_ = dir_ + "/ckpt-0000000002";
    ASSERT_NO_THROW(read_checkpoint(ckpt_));
    // The manifest records the tern that wrote it (informational, not checked on read).
    EXPECT_EQ(nlohmann::json::parse(io::read_file(file("manifest.json")))["tern_version"],
              tern::version());
  }
  std::string file(const std::string& name) const { return ckpt_ + "/" + name; }
  // Replaces a data file and re-signs the manifest, so only the format validator can object.
  void replace_and_resign(const std::string& name, const std::string& bytes) {
    io::write_file_atomically(file(name), bytes);
    nlohmann::ordered_json j = nlohmann::ordered_json::parse(io::read_file(file("manifest.json")));
    j["files"][name] = {{"bytes", bytes.size()}, {"sha256", sha256_hex(bytes)}};
    std::string text = j.dump(2) + "\n";
    io::write_file_atomically(file("manifest.json"), text);
    io::write_file_atomically(file("manifest.json.sha256"), sha256_hex(text) + "\n");
  }
  void expect_data_loss(const std::string& names_file, const std::string& says) {
    try {
      read_checkpoint(ckpt_);
      FAIL() << "no error";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kDataLoss) << e.what();
      EXPECT_NE(e.message().find(names_file), std::string::npos) << e.message();
      EXPECT_NE(e.message().find(says), std::string::npos) << e.message();
    }
  }
  std::string dir_, ckpt_;
};

TEST_F(CorruptCheckpointTest, TruncatedFile) {
  std::string w = io::read_file(file("weights.safetensors"));
  io::write_file_atomically(file("weights.safetensors"), w.substr(0, w.size() - 5));
  expect_data_loss("weights.safetensors", "truncated");
}

TEST_F(CorruptCheckpointTest, FlippedByte) {
  std::string w = io::read_file(file("optimizer.safetensors"));
  w[w.size() / 2] ^= 0x10;
  io::write_file_atomically(file("optimizer.safetensors"), w);
  expect_data_loss("optimizer.safetensors", "SHA-256");
}

TEST_F(CorruptCheckpointTest, FlippedIteratorAndManifestBytes) {
  std::string it = io::read_file(file("data_iterator.bin"));
  it[it.size() / 2] ^= 1;
  io::write_file_atomically(file("data_iterator.bin"), it);
  expect_data_loss("data_iterator.bin", "SHA-256");
  it[it.size() / 2] ^= 1;
  io::write_file_atomically(file("data_iterator.bin"), it);
  ASSERT_NO_THROW(read_checkpoint(ckpt_));
  std::string m = io::read_file(file("manifest.json"));
  m[m.find("global_step") + 14] ^= 1;
  io::write_file_atomically(file("manifest.json"), m);
  expect_data_loss("manifest.json", "corrupt");
}

TEST_F(CorruptCheckpointTest, HugeHeaderSize) {
  std::string w = io::read_file(file("weights.safetensors"));
  uint64_t huge = uint64_t{1} << 60;
  std::memcpy(w.data(), &huge, 8);
  replace_and_resign("weights.safetensors", w);
  expect_data_loss("weights.safetensors", "exceeds the cap");
}

TEST_F(CorruptCheckpointTest, OverlappingOffsets) {
  std::string json = R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                     R"("b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})";
  while (json.size() % 8) json += ' ';
  std::string bytes(8, '\0');
  uint64_t n = json.size();
  std::memcpy(bytes.data(), &n, 8);
  bytes += json + std::string(12, '\0');
  replace_and_resign("weights.safetensors", bytes);
  expect_data_loss("weights.safetensors", "overlap");
}

TEST_F(CorruptCheckpointTest, MissingManifestAndWrongModel) {
  std::filesystem::remove(file("manifest.json"));
  expect_data_loss(ckpt_, "manifest.json");
  // latest_checkpoint skips the damaged one; an incomplete directory is never picked.
  std::optional<std::string> latest = latest_checkpoint(dir_);
  EXPECT_FALSE(latest.has_value());
}

TEST_F(CheckpointTest, AutoNamedLayersMatchByPosition) {
  // Auto-generated layer names differ between two models built in one process.
  auto build = [] {
    auto m = std::make_unique<nn::Sequential>(
        std::vector<nn::LayerPtr>{nn::Dense(8, "relu"), nn::Dense(4)}, Shape{8});
    m->build();
    m->compile(std::make_shared<optim::Adam>(1e-2),
               std::make_shared<nn::SparseCategoricalCrossentropy>(true));
    return m;
  };
  std::string dir = fresh_dir("positional");
  auto a = build();
  nn::FitOptions o = fit_options(1);
  o.callbacks = {std::make_shared<ModelCheckpoint>(ModelCheckpointOptions{.dir = dir})};
  a->fit(make_pipeline(x_, y_), o);
  auto b = build();
  ASSERT_NE(a->weights()[0].name, b->weights()[0].name);
  restore_checkpoint(*b, read_checkpoint(*latest_checkpoint(dir)));
  EXPECT_TRUE(bitwise_equal(weights_of(*a), weights_of(*b)));
  std::string b_prefix = "optimizer/" + b->weights()[0].name + "/";
  int slots = 0;
  for (const auto& name : b->variables().names()) {
    if (name.rfind(b_prefix, 0) != 0) continue;
    ++slots;
    const Tensor& got = b->variables().get(name);
    const Tensor& want = a->variables().get("optimizer/" + a->weights()[0].name + "/" +
                                            name.substr(b_prefix.size()));
    EXPECT_EQ(std::memcmp(got.raw_data(), want.raw_data(), got.nbytes()), 0) << name;
  }
  EXPECT_EQ(slots, 2);  // Adam's two moments
}

TEST_F(CheckpointTest, RestoreRefusesAnotherModel) {
  std::string dir = fresh_dir("other");
  auto m = make_model();
  nn::FitOptions o = fit_options(1);
  o.callbacks = {std::make_shared<ModelCheckpoint>(ModelCheckpointOptions{.dir = dir})};
  m->fit(make_pipeline(x_, y_), o);
  nn::Sequential other({nn::Dense(4, nn::DenseOptions{.name = "single"})}, Shape{8});
  other.build();
  other.compile(std::make_shared<optim::Adam>(1e-2),
                std::make_shared<nn::SparseCategoricalCrossentropy>(true));
  try {
    restore_checkpoint(other, read_checkpoint(*latest_checkpoint(dir)));
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(e.message().find("single/"), std::string::npos) << e.message();
  }
}

}  // namespace
}  // namespace tern::train
