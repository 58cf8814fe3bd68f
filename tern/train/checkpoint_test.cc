// Checkpoints: round trip, exact resume in the middle of an epoch (bitwise-equal weights to an
// uninterrupted run), retention, save_best_only, BackupAndRestore, and corrupt checkpoints, each
// of which must be a DataLoss error naming the file.
#include "tern/train/checkpoint.h"

#include <gtest/gtest.h>
#include <sys/mount.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>

#include "tern/base/sha256.h"
#include "tern/base/version.h"
#include "tern/io/atomic_file.h"
#include "tern/train/checkpoint_lock.h"
#include "tern/train/model_checkpoint.h"
#include "tern/train/model_weights.h"
#include "tern/train/observe_test_util.h"
#include "tests/support/random_tensor.h"

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
    if (e.path().filename() == kCheckpointLockFile) continue;  // the run's lock (stays)
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

// Sets every value of the model's first weight to NaN after global batch `at` (weights that a
// NaN input or a huge learning rate ruined).
class PoisonAt : public Callback {
 public:
  explicit PoisonAt(int64_t at) : at_(at) {}
  void on_train_batch_end(int64_t, Logs&) override {
    if (model()->training_state()->progress.global_step != at_) return;
    const std::string name = model()->weights().front().name;
    Tensor w = model()->variables().get(name).clone();
    for (int64_t i = 0; i < w.num_elements(); ++i) w.set(i, std::nan(""));
    model()->variables().assign(name, w);
  }

 private:
  int64_t at_;
};

// Bad-input report F4: checkpoints of NaN weights were written (and, with keep_last, pruned the
// good ones; --resume then restored NaN weights). Now saves of non-finite weights are skipped and
// BackupAndRestore keeps its backups after such a run.
TEST_F(CheckpointTest, NonFiniteWeightsAreNeverCheckpointed) {
  std::string dir = fresh_dir("nan");
  auto m = make_model();
  nn::FitOptions o = fit_options(1);
  o.steps_per_epoch = 8;
  o.callbacks = {std::make_shared<PoisonAt>(5),
                 std::make_shared<ModelCheckpoint>(
                     ModelCheckpointOptions{.dir = dir + "/ckpt", .save_freq = 2, .keep_last = 1}),
                 std::make_shared<BackupAndRestore>(
                     BackupAndRestoreOptions{.backup_dir = dir + "/backup", .save_freq = 2})};
  m->fit(make_pipeline(x_, y_), o);
  std::vector<std::string> kept = list_checkpoints(dir + "/ckpt");
  ASSERT_EQ(kept.size(), 1u);
  EXPECT_NE(kept[0].find("ckpt-0000000004"), std::string::npos) << kept[0];
  std::vector<std::string> backups = list_checkpoints(dir + "/backup");
  ASSERT_FALSE(backups.empty()) << "the backups of a run that ruined its weights were deleted";
  EXPECT_NE(backups.back().find("ckpt-0000000004"), std::string::npos) << backups.back();
  EXPECT_EQ(first_non_finite_weight(*make_model()), "");
  EXPECT_NE(first_non_finite_weight(*m).find("values NaN or Inf"), std::string::npos);
}

// Bad-input report F5: a step directory that already existed (an earlier run's, or a damaged one)
// made save_checkpoint return without writing; a fresh run over an earlier run's folder wrote no
// checkpoint at all.
TEST_F(CheckpointTest, AnExistingStepDirectoryIsReplacedAndAFreshRunRefusesOldCheckpoints) {
  std::string dir = fresh_dir("replace");
  auto m = make_model();
  nn::FitOptions o = fit_options(1);
  o.steps_per_epoch = 2;
  m->fit(make_pipeline(x_, y_), o);
  const std::string step2 = dir + "/ckpt-0000000002";
  std::filesystem::create_directories(step2);
  std::ofstream(step2 + "/manifest.json") << "left by a run that died";
  EXPECT_EQ(save_checkpoint(dir, *m, capture_checkpoint_state(*m)), step2);
  Checkpoint c = read_checkpoint(step2);
  EXPECT_EQ(c.state.position.global_step, 2);
  EXPECT_EQ(list_checkpoints(dir).size(), 1u);
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().filename() == kCheckpointLockFile) continue;
    EXPECT_EQ(e.path().filename().string(), "ckpt-0000000002") << "leftover " << e.path();
  }
  // A new run (no resume) with a ModelCheckpoint on that folder: an error naming the way out.
  auto fresh = make_model();
  o.callbacks = {
      std::make_shared<ModelCheckpoint>(ModelCheckpointOptions{.dir = dir, .save_freq = 1})};
  EXPECT_TERN_ERROR(fresh->fit(make_pipeline(x_, y_), o), ErrorCode::kFailedPrecondition,
                    "holds 1 checkpoint(s) of an earlier run (newest ckpt-0000000002)");
  // Continuing that run is fine, and its checkpoints replace nothing silently.
  restore_checkpoint(*fresh, read_checkpoint(step2));
  o.epochs = 2;
  fresh->fit(make_pipeline(x_, y_), o);
  EXPECT_EQ(list_checkpoints(dir).size(), 3u);  // steps 2, 3, 4
}

// Bad-input report F20: a checkpoint that failed on a full disk left its .tmp-ckpt-* directory
// filling the disk until the next run. A 16 KiB tmpfs (root only; skipped where mounting is not
// permitted): the weights do not fit, the save fails, nothing is left.
TEST_F(CheckpointTest, AFailedSaveLeavesNoTemporaryDirectory) {
  std::string dir = fresh_dir("full") + "/ckpt";
  std::filesystem::create_directories(dir);
  if (::mount("tmpfs", dir.c_str(), "tmpfs", 0, "size=16k") != 0) {
    GTEST_SKIP() << "cannot mount a tmpfs here: " << std::strerror(errno);
  }
  {
    std::ofstream filler(dir + "/filler", std::ios::binary);
    filler << std::string(12 << 10, 'x');
  }
  auto m = make_model();
  nn::FitOptions o = fit_options(1);
  o.steps_per_epoch = 2;
  m->fit(make_pipeline(x_, y_), o);
  std::string error;
  try {
    save_checkpoint(dir, *m, capture_checkpoint_state(*m));
  } catch (const Error& e) {
    error = e.what();
  }
  std::vector<std::string> left;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().filename() != kCheckpointLockFile) left.push_back(e.path().filename().string());
  }
  ::umount(dir.c_str());
  EXPECT_NE(error.find("No space left on device"), std::string::npos) << error;
  EXPECT_EQ(left, std::vector<std::string>{"filler"});
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
  // Changes the manifest with `edit` and re-signs it (every hash right, the content forged).
  template <typename Edit>
  void forge_manifest(Edit edit) {
    nlohmann::ordered_json j = nlohmann::ordered_json::parse(io::read_file(file("manifest.json")));
    edit(j);
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

TEST_F(CorruptCheckpointTest, ManifestHashIsASha256sumLineAndTheOldFormatStillReads) {
  const std::string line = io::read_file(file("manifest.json.sha256"));
  EXPECT_EQ(line, sha256_hex(io::read_file(file("manifest.json"))) + "  manifest.json\n");
  const std::string check = "cd '" + ckpt_ + "' && sha256sum --check --status manifest.json.sha256";
  EXPECT_EQ(std::system(check.c_str()), 0) << check;
  // Checkpoints written before: the bare digest; sha256sum's binary mode marker is read too.
  const std::string digest = line.substr(0, 64);
  for (const std::string& old : {digest + "\n", digest, digest + " *manifest.json\n"}) {
    io::write_file_atomically(file("manifest.json.sha256"), old);
    EXPECT_NO_THROW(read_checkpoint(ckpt_)) << old;
  }
  io::write_file_atomically(file("manifest.json.sha256"), digest + "  other.json\n");
  expect_data_loss("manifest.json.sha256", "not a sha256sum line");
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

// Bad-input report F16: checkpoints whose hashes were all recomputed but whose content no run
// writes were accepted: a global step of 2^63-1 (the counter overflowed), step_in_epoch 10^12, a
// negative learning rate or RNG offset, an iterator blob whose own checksum fails (ckpt inspect
// said "all files verified"), a missing optimizer slot (silently zero: resume not exact), and a
// resume point past the run's last epoch (nothing trained, exit 0).
TEST_F(CorruptCheckpointTest, ForgedButWellSignedContentIsRefused) {
  const std::string good = io::read_file(file("manifest.json"));
  auto restore_good = [&] {
    io::write_file_atomically(file("manifest.json"), good);
    io::write_file_atomically(file("manifest.json.sha256"), sha256_hex(good) + "\n");
  };
  forge_manifest([](auto& j) { j["global_step"] = std::numeric_limits<int64_t>::max(); });
  expect_data_loss("manifest.json", "is beyond any run");
  restore_good();
  forge_manifest([](auto& j) { j["step_in_epoch"] = int64_t{1000000000000}; });
  expect_data_loss("manifest.json", "step_in_epoch 1000000000000 exceeds global_step 2");
  restore_good();
  forge_manifest([](auto& j) { j["lr_schedule"]["learning_rate"] = -0.5; });
  expect_data_loss("manifest.json", "learning_rate -0.5");
  restore_good();
  forge_manifest([](auto& j) { j["rng"]["dropout_offset"] = -3; });
  expect_data_loss("manifest.json", "negative micro_step, dropout RNG offset");
  restore_good();
  std::string it = io::read_file(file("data_iterator.bin"));
  it[it.size() / 2] ^= 1;
  replace_and_resign("data_iterator.bin", it);
  expect_data_loss("data_iterator.bin", "iterator state: checksum mismatch");
}

TEST_F(CorruptCheckpointTest, AMissingOptimizerSlotOrAPointPastTheRunIsRefused) {
  io::NamedTensors slots = read_checkpoint(ckpt_).optimizer;
  const std::string dropped = slots.front().first;
  slots.erase(slots.begin());
  replace_and_resign("optimizer.safetensors", io::encode_safetensors(slots, {}));
  auto m = make_model();
  EXPECT_TERN_ERROR(restore_checkpoint(*m, read_checkpoint(ckpt_)), ErrorCode::kDataLoss,
                    "has no optimizer slot '" + dropped + "' after 2 iterations");
  // A resume point at epoch 50 (complete) of a 2-epoch run.
  std::string other = fresh_dir("past_end");
  auto a = make_model();
  nn::FitOptions o = fit_options(1);
  o.callbacks = {std::make_shared<ModelCheckpoint>(ModelCheckpointOptions{.dir = other})};
  a->fit(make_pipeline(x_, y_), o);
  Checkpoint c = read_checkpoint(*latest_checkpoint(other));
  c.state.position.epoch = 49;
  auto b = make_model();
  restore_checkpoint(*b, c);
  EXPECT_TERN_ERROR(b->fit(make_pipeline(x_, y_), fit_options(2)), ErrorCode::kInvalidArgument,
                    "the resume point (epoch 50, complete) is past the last epoch of this run "
                    "(epochs = 2)");
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
