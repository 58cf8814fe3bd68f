// Configs from the bad-input report (BAD-INPUTS-2026-11-23): each value here was accepted, crashed
// or was silently changed before its fix; now each is an error naming the file, line and key.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "tern/config/builders.h"
#include "tern/config/config.h"
#include "tern/config/training_data.h"
#include "tern/data/image_codec.h"
#include "tests/support/random_tensor.h"

namespace tern::config {
namespace {

std::string write_config(const std::string& name, const std::string& text) {
  std::string dir = ::testing::TempDir() + "/tern_bad_input_config_test";
  std::filesystem::create_directories(dir);
  std::string path = dir + "/" + name;
  std::ofstream(path) << text;
  return path;
}

const char* kTfrecordData = R"([data]
source = "tfrecord"
train_files = "train.tfrecord"
test_files = "test.tfrecord"
input = "image/encoded"
label = "image/class/label"
num_classes = 10
[data.features]
"image/encoded" = {type = "bytes", dtype = "u8", shape = [28, 28, 1]}
"image/class/label" = {type = "int64"}
)";

// F3: 10^5..10^6 threads crashed (SIGSEGV in libgomp, std::terminate in the thread pool).
TEST(BadInputConfig, ThreadCountsAreBounded) {
  std::string p = write_config("threads.toml", "[training]\nepochs = 1\n\nthreads = 1000000\n");
  EXPECT_TERN_ERROR(load_config(p), ErrorCode::kInvalidArgument,
                    "threads.toml:4: key 'training.threads' must be 0 (all cores) or 1..1024");
  EXPECT_TERN_ERROR(load_config(p, {"training.threads=-1"}), ErrorCode::kInvalidArgument,
                    "key 'training.threads' must be 0 (all cores) or 1..1024");
  EXPECT_EQ(load_config(p, {"training.threads=1024"}).training.threads, 1024);
  std::string t = write_config("parallel.toml", std::string(kTfrecordData) + R"(
[[data.transforms]]
op = "batch"
[[data.transforms]]
op = "parse"
parallel = 1000000
)");
  EXPECT_TERN_ERROR(load_config(t), ErrorCode::kInvalidArgument,
                    "key 'data.transforms[1].parallel' must be -1 (AUTOTUNE), 1..1024");
  std::string i = write_config("image_parallel.toml", R"([data]
source = "image_dir"
train_dir = "train"
test_dir = "test"
num_classes = 2
[data.image_dir]
image_size = [8, 8]
parallel = 100000
)");
  EXPECT_TERN_ERROR(load_config(i), ErrorCode::kInvalidArgument,
                    "key 'data.image_dir.parallel' must be -1 (AUTOTUNE), 1..1024");
}

// F10: a directory or a device as the config parsed as an empty table: tern train trained the
// default model under runs/default and exited 0 (/dev/zero never finished reading).
TEST(BadInputConfig, TheConfigMustBeARegularFile) {
  std::string dir = ::testing::TempDir() + "/tern_bad_input_config_dir";
  std::filesystem::create_directories(dir);
  EXPECT_TERN_ERROR(load_config(dir), ErrorCode::kInvalidArgument,
                    "config file: '" + dir + "' is not a regular file (a directory)");
  EXPECT_TERN_ERROR(load_config("/dev/null"), ErrorCode::kInvalidArgument,
                    "config file: '/dev/null' is not a regular file (a character device)");
  EXPECT_TERN_ERROR(load_config(dir + "/missing.toml"), ErrorCode::kNotFound, "does not exist");
}

// F15: int fields were filled by a cast from int64: epochs = 4294967298 ran 2 epochs,
// gradient_accumulation_steps = 2147483648 said "must be >= 1".
TEST(BadInputConfig, IntegersOutsideTheirFieldAreErrors) {
  std::string p = write_config("big.toml", "[training]\n\nepochs = 4294967298\n");
  EXPECT_TERN_ERROR(load_config(p), ErrorCode::kInvalidArgument,
                    "big.toml:3: key 'training.epochs' = 4294967298 is out of range "
                    "(-2147483648 to 2147483647)");
  std::string q = write_config("ok.toml", "[training]\nepochs = 2\n");
  EXPECT_TERN_ERROR(load_config(q, {"training.gradient_accumulation_steps=2147483648"}),
                    ErrorCode::kInvalidArgument,
                    "key 'training.gradient_accumulation_steps' = 2147483648 is out of range");
  EXPECT_TERN_ERROR(load_config(q, {"callbacks.early_stopping.patience=4294967297"}),
                    ErrorCode::kInvalidArgument,
                    "key 'callbacks.early_stopping.patience' = 4294967297 is out of range");
  EXPECT_EQ(load_config(q, {"training.epochs=2147483647"}).training.fit.epochs, 2147483647);
}

// F19: nonsense values that were accepted silently (exit 0).
TEST(BadInputConfig, NonsenseValuesAreErrors) {
  std::string p = write_config("nonsense.toml", "[training]\nepochs = 1\n");
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"optimizer.learning_rate=inf", "key 'optimizer.learning_rate' must be positive and finite"},
      {"training.steps_per_epoch=-5", "key 'training.steps_per_epoch' must be -1"},
      {"training.threads=-1", "key 'training.threads' must be 0 (all cores) or 1..1024"},
      // Was accepted and failed later in the prefetch stage, naming no key.
      {"data.prefetch=0", "key 'data.prefetch' must be >= 1 (batches made ahead"},
      {"data.prefetch=-3", "key 'data.prefetch' must be >= 1 (batches made ahead"},
  };
  for (const auto& [set, says] : cases) {
    SCOPED_TRACE(set);
    EXPECT_TERN_ERROR(load_config(p, {set}), ErrorCode::kInvalidArgument, says);
  }
  // A --set value with a line break set its first line and dropped the rest.
  EXPECT_TERN_ERROR(load_config(p, {"training.epochs=2\noptimizer.learning_rate=5"}),
                    ErrorCode::kInvalidArgument, "the value holds a line break");
  EXPECT_TERN_ERROR(load_config(p, {"schedule.name=\"cosine\"", "schedule.alpha=-5.0"}),
                    ErrorCode::kInvalidArgument, "key 'schedule.alpha' must be in [0, 1], got -5");
  EXPECT_TERN_ERROR(load_config(p, {"schedule.name=\"piecewise\"", "schedule.boundaries=[10]",
                                    "schedule.values=[-1.0, 0.1]"}),
                    ErrorCode::kInvalidArgument, "key 'schedule.values' must be finite learning");
  std::string scale = write_config("scale.toml", std::string(kTfrecordData) + R"(
[[data.transforms]]
op = "parse"
[[data.transforms]]
op = "map"
fn = "scale"
factor = nan
)");
  EXPECT_TERN_ERROR(load_config(scale), ErrorCode::kInvalidArgument,
                    "key 'data.transforms[1].factor' must be finite, got nan");
  // Model arguments: a rate <= 0 or NaN added no Dropout layer (whose check never ran); a
  // negative dense_units dropped the hidden layer.
  TrainConfig mlp = load_config(p, {"model.name=\"mlp\"", "model.args.dropout=-0.5"});
  EXPECT_TERN_ERROR(make_model(mlp, Shape{8}), ErrorCode::kInvalidArgument,
                    "mlp: dropout must be in [0, 1), got -0.5");
  mlp = load_config(p, {"model.name=\"mlp\"", "model.args.dropout=nan"});
  EXPECT_TERN_ERROR(make_model(mlp, Shape{8}), ErrorCode::kInvalidArgument,
                    "mlp: dropout must be in [0, 1), got nan");
  TrainConfig cnn = load_config(p, {"model.name=\"cnn\"", "model.args.dense_units=-1"});
  EXPECT_TERN_ERROR(make_model(cnn, Shape{8, 8, 1}), ErrorCode::kInvalidArgument,
                    "cnn: dense_units must be >= 0");
}

// F13 (site 7): the config hash printed arrays through toml++'s formatter, whose width estimate
// casts log10 of each float to size_t (undefined below 1 and for nan: schedule.values = [0.1]).
// Arrays holding floats are printed element by element; others exactly as before (same hashes).
TEST(BadInputConfig, TheConfigHashPrintsFloatArraysWithoutTheFormatter) {
  std::string p = write_config("hash.toml", R"([model]
name = "mlp"
[model.args]
units = [64, 32]
[schedule]
name = "piecewise"
boundaries = [10]
values = [0.1, 0.01]
)");
  TrainConfig c = load_config(p);
  EXPECT_EQ(c.effective.at("schedule.values"), "[ 0.10000000000000001, 0.01 ]");
  EXPECT_EQ(c.effective.at("model.args.units"), "[ 64, 32 ]");
  EXPECT_EQ(c.effective.at("schedule.boundaries"), "[ 10 ]");
  EXPECT_EQ(c.effective.at("schedule.name"), "'piecewise'");
}

// root/<class>/{0,1}.png for each class: 4x4 gray images.
void write_image_folder(const std::string& root, const std::vector<std::string>& classes) {
  for (size_t k = 0; k < classes.size(); ++k) {
    std::filesystem::create_directories(root + "/" + classes[k]);
    for (int i = 0; i < 2; ++i) {
      Tensor image(DType::kU8, Shape{4, 4, 1});
      for (int64_t p = 0; p < 16; ++p) image.set(p, static_cast<double>(40 * k + 3 * p + i));
      data::write_file_bytes(str_cat(root, "/", classes[k], "/", i, ".png"),
                             data::encode_png(image));
    }
  }
}

// F6: each split was labelled by its own subfolders: one extra empty folder in test_dir took test
// accuracy from 0.844 to 0.098, a renamed one to 0.004, with exit 0. Now every split takes the
// training folder's classes and must hold exactly those folders.
TEST(BadInputConfig, ImageFoldersShareTheTrainingSplitsClassMap) {
  std::string root = ::testing::TempDir() + "/tern_bad_input_image_dirs";
  std::filesystem::remove_all(root);
  write_image_folder(root + "/train", {"0", "1", "2"});
  write_image_folder(root + "/same", {"0", "1", "2"});
  write_image_folder(root + "/extra", {"00_unused", "0", "1", "2"});
  write_image_folder(root + "/renamed", {"zero", "1", "2"});
  std::string p = write_config("images.toml", str_cat(R"([data]
source = "image_dir"
train_dir = ")",
                                                      root, R"(/train"
test_dir = ")",
                                                      root, R"(/same"
num_classes = 3
[data.image_dir]
image_size = [4, 4]
channels = 1
[[data.transforms]]
op = "map"
fn = "scale"
)"));
  TrainConfig cfg = load_config(p);
  TrainingData d = make_training_data(cfg, true, {});
  EXPECT_EQ(d.train_samples, 6);
  for (const char* bad : {"extra", "renamed"}) {
    SCOPED_TRACE(bad);
    TrainConfig c = load_config(p, {str_cat("data.test_dir=\"", root, "/", bad, "\"")});
    const std::string folder = std::string(bad) == "extra" ? "00_unused" : "zero";
    EXPECT_TERN_ERROR(make_training_data(c, true, {}), ErrorCode::kInvalidArgument,
                      str_cat("subfolder '", folder, "' is not one of the 3 classes (0, 1, 2)"));
    // tern eval / predict read only the test split: the same class map.
    EXPECT_TERN_ERROR(make_training_data(c, /*with_train=*/false, {}), ErrorCode::kInvalidArgument,
                      "is not one of the 3 classes");
  }
}

}  // namespace
}  // namespace tern::config
