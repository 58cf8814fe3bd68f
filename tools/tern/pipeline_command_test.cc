// `tern train / eval / predict` fed by [data] input pipelines: tiny TFRecord, CSV and IDX datasets
// written by the test, trained through cmd_train; records that do not match the feature spec
// (the config-reading errors are tested in tern/config/read_pipeline_test.cc).
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "tern/base/philox.h"
#include "tern/data/convert.h"
#include "tern/data/example_proto.h"
#include "tern/data/image_codec.h"
#include "tern/data/tfrecord_writer.h"
#include "tern/io/atomic_file.h"
#include "tests/support/idx_writer.h"
#include "tests/support/random_tensor.h"
#include "tools/tern/commands.h"

namespace tern::tools {
namespace {

using ::tern::testing::write_idx_u8;

// 8x8 u8 images; class k (of 4) has a bright quadrant k.
struct Samples {
  std::vector<std::string> images;  // 64 bytes each
  std::vector<int64_t> labels;
};

Samples make_samples(int n, uint64_t seed) {
  Samples s;
  PhiloxStream rng(seed);
  for (int i = 0; i < n; ++i) {
    auto k = static_cast<int64_t>(rng.next_below(4));
    std::string img(64, '\0');
    for (int r = 0; r < 8; ++r) {
      for (int c = 0; c < 8; ++c) {
        bool bright = (r / 4) * 2 + (c / 4) == k;
        img[static_cast<size_t>(r * 8 + c)] =
            static_cast<char>((bright ? 180 : 20) + rng.next_below(60));
      }
    }
    s.images.push_back(img);
    s.labels.push_back(k);
  }
  return s;
}

// tf.train.Examples {image: bytes (raw pixels), label: int64} split over `files` files.
void write_tfrecords(const std::string& prefix, const Samples& s, int files,
                     data::Compression compression) {
  for (int f = 0; f < files; ++f) {
    data::TFRecordWriter w(prefix + "-" + std::to_string(f) + ".tfrecord", compression);
    for (size_t i = static_cast<size_t>(f); i < s.images.size(); i += static_cast<size_t>(files)) {
      data::Example e;
      e.features["image"] = data::Feature::bytes({s.images[i]});
      e.features["label"] = data::Feature::int64s({s.labels[i]});
      w.write(data::serialize_example(e));
    }
    w.close();
  }
}

// Points in [-1, 1]^2, labelled by quadrant; one row with an empty x1 takes the default.
void write_csv(const std::string& path, int n, uint64_t seed) {
  PhiloxStream rng(seed);
  std::ofstream out(path);
  out << "x0,x1,quadrant\n";
  for (int i = 0; i < n; ++i) {
    double x0 = rng.next_double() * 2 - 1, x1 = rng.next_double() * 2 - 1;
    out << x0 << "," << x1 << "," << (x0 > 0 ? 1 : 0) + (x1 > 0 ? 2 : 0) << "\n";
  }
  out << "0.5,,1\n";
}

int run(std::vector<std::string> args, int (*cmd)(int, char**)) {
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  return cmd(static_cast<int>(argv.size()), argv.data());
}

class PipelineCommand : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "/tern_pipeline_command";
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    Samples train = make_samples(512, 1), test = make_samples(128, 2);
    write_tfrecords(dir_ + "/train", train, 2, data::Compression::kGzip);
    write_tfrecords(dir_ + "/test", test, 1, data::Compression::kGzip);
    std::string ti, vi;
    for (const auto& s : train.images) ti += s;
    for (const auto& s : test.images) vi += s;
    std::string tl(train.labels.begin(), train.labels.end()),
        vl(test.labels.begin(), test.labels.end());
    write_idx_u8(dir_ + "/train-images.idx", {512, 8, 8}, ti);
    write_idx_u8(dir_ + "/train-labels.idx", {512}, tl);
    write_idx_u8(dir_ + "/test-images.idx", {128, 8, 8}, vi);
    write_idx_u8(dir_ + "/test-labels.idx", {128}, vl);
    write_csv(dir_ + "/train.csv", 1024, 3);
    write_csv(dir_ + "/test.csv", 256, 4);
  }

  // The common keys around a [data] section.
  std::string config(const std::string& data, int epochs = 3) {
    std::string path = dir_ + "/cfg.toml";
    std::ofstream(path) << "[model]\nname = \"mlp\"\n[model.args]\nunits = [32]\n"
                        << data << "[optimizer]\nlearning_rate = 0.01\n"
                        << "[training]\nepochs = " << epochs
                        << "\nbatch_size = 32\ndeterministic = true\n"
                        << "[output]\ndir = \"" << dir_ << "/run\"\n";
    return path;
  }

  std::string tfrecord_data(const std::string& transforms) {
    return "[data]\nsource = \"tfrecord\"\nnum_classes = 4\ntrain_files = \"" + dir_ +
           "/train-*.tfrecord\"\ntest_files = [\"" + dir_ +
           "/test-*.tfrecord\"]\ncompression = \"GZIP\"\n" +
           "[data.features]\nimage = {type = \"bytes\", dtype = \"u8\", shape = [8, 8, 1]}\n" +
           "label = {type = \"int64\"}\n" + transforms;
  }

  nlohmann::json train(const std::string& cfg) {
    std::string metrics = dir_ + "/m.json";
    EXPECT_EQ(run({"train", cfg, "--quiet", "--metrics-json", metrics}, cmd_train), 0);
    return nlohmann::json::parse(io::read_file(metrics));
  }

  std::string dir_;
};

const char* kTFRecordTransforms =
    "[[data.transforms]]\nop = \"shuffle\"\nbuffer = 1000\n"
    "[[data.transforms]]\nop = \"parse\"\n"
    "[[data.transforms]]\nop = \"map\"\nfn = \"scale\"\n"
    "[[data.transforms]]\nop = \"batch\"\nsize = 32\n"
    "[[data.transforms]]\nop = \"prefetch\"\n";

TEST_F(PipelineCommand, TrainsFromTFRecordThenEvaluatesAndPredicts) {
  std::string cfg = config(tfrecord_data(kTFRecordTransforms));
  nlohmann::json j = train(cfg);
  EXPECT_GT(j["test_accuracy"].get<double>(), 0.95) << j.dump();
  EXPECT_EQ(j["epochs"].get<int>(), 3);
  EXPECT_EQ(j["monitor"]["steps"].get<int64_t>(), 3 * 16);
  // Deterministic: the same weights again (seeded shuffles, ordered parallel parse).
  nlohmann::json j2 = train(cfg);
  EXPECT_EQ(j2["weights_sha256"], j["weights_sha256"]);

  ::testing::internal::CaptureStdout();
  ASSERT_EQ(run({"eval", cfg}, cmd_eval), 0);
  std::string out = ::testing::internal::GetCapturedStdout();
  EXPECT_NE(out.find("test_accuracy: "), std::string::npos) << out;

  std::string csv = dir_ + "/pred.csv";
  ASSERT_EQ(run({"predict", cfg, "--limit", "40", "--output", csv}, cmd_predict), 0);
  std::istringstream lines(io::read_file(csv));
  std::string line;
  std::getline(lines, line);
  EXPECT_EQ(line, "index,predicted,label,p0,p1,p2,p3");
  int rows = 0, right = 0;
  while (std::getline(lines, line)) {
    std::istringstream f(line);
    std::string idx, pred, label;
    std::getline(f, idx, ',');
    std::getline(f, pred, ',');
    std::getline(f, label, ',');
    ++rows;
    right += pred == label;
  }
  EXPECT_EQ(rows, 40);  // spans two test batches
  EXPECT_GE(right, 36);
}

TEST_F(PipelineCommand, TrainsFromCsv) {
  std::string cfg =
      config("[data]\nsource = \"csv\"\nnum_classes = 4\ntrain_files = \"" + dir_ +
                 "/train.csv\"\ntest_files = \"" + dir_ + "/test.csv\"\n" +
                 "[data.csv]\ncolumns = [\"float\", \"float\", \"int64\"]\ndefaults = [0, 0, 0]\n" +
                 "[[data.transforms]]\nop = \"cache\"\n"
                 "[[data.transforms]]\nop = \"shuffle\"\nbuffer = 2000\n"
                 "[[data.transforms]]\nop = \"batch\"\nsize = 16\n",
             8);
  nlohmann::json j = train(cfg);
  EXPECT_GT(j["test_accuracy"].get<double>(), 0.9) << j.dump();
  EXPECT_EQ(j["monitor"]["steps"].get<int64_t>(), 8 * 65);  // 1025 rows / 16
}

TEST_F(PipelineCommand, IdxWithAugmentationValidationSplitAndOneHot) {
  // random_crop trains on 6x6 windows and evaluates on the center one; one_hot labels with a
  // categorical loss; validation holds out the last 25% of the training rows.
  std::string cfg =
      config("[data]\nsource = \"idx\"\nnum_classes = 4\nvalidation_split = 0.25\n" +
             std::string("train_images = \"") + dir_ + "/train-images.idx\"\ntrain_labels = \"" +
             dir_ + "/train-labels.idx\"\ntest_images = \"" + dir_ +
             "/test-images.idx\"\ntest_labels = \"" + dir_ + "/test-labels.idx\"\n" +
             "[[data.transforms]]\nop = \"shuffle\"\nbuffer = 512\n"
             "[[data.transforms]]\nop = \"map\"\nfn = \"random_crop\"\nsize = [6, 6]\n"
             "[[data.transforms]]\nop = \"map\"\nfn = \"random_brightness\"\nmax_delta = "
             "0.1\nparallel = 2\n"
             "[[data.transforms]]\nop = \"map\"\nfn = \"normalize\"\nmean = 0.5\nstd = 0.25\n"
             "[[data.transforms]]\nop = \"map\"\nfn = \"one_hot\"\n"
             "[loss]\nname = \"categorical_crossentropy\"\n");
  nlohmann::json j = train(cfg);
  EXPECT_GT(j["test_accuracy"].get<double>(), 0.9) << j.dump();
  EXPECT_EQ(j["monitor"]["steps"].get<int64_t>(), 3 * 12);  // 384 rows, batch 32
  ::testing::internal::CaptureStdout();
  ASSERT_EQ(run({"summary", cfg}, cmd_summary), 0);
  std::string out = ::testing::internal::GetCapturedStdout();
  EXPECT_NE(out.find("1184"), std::string::npos) << out;  // 6 * 6 inputs -> 32 units
}

TEST_F(PipelineCommand, ExampleConfigTrainsFromConvertedTFRecords) {
  // examples/fashion_mnist_tfrecord.toml on 28x28 images that `tern data convert` wrote.
  std::string images, labels;
  PhiloxStream rng(5);
  for (int i = 0; i < 96; ++i) {
    for (int p = 0; p < 784; ++p) images += static_cast<char>(rng.next_below(256));
    labels += static_cast<char>(i % 10);
  }
  write_idx_u8(dir_ + "/fm-images.idx", {96, 28, 28}, images);
  write_idx_u8(dir_ + "/fm-labels.idx", {96}, labels);
  std::filesystem::create_directories(dir_ + "/fm");
  data::ConvertOptions o;
  o.labels = dir_ + "/fm-labels.idx";
  o.image_format = "raw";
  EXPECT_EQ(
      data::convert_image_dataset(dir_ + "/fm-images.idx", dir_ + "/fm/train.tfrecord", o).written,
      96);
  EXPECT_EQ(
      data::convert_image_dataset(dir_ + "/fm-images.idx", dir_ + "/fm/test.tfrecord", o).written,
      96);
  std::string metrics = dir_ + "/fm.json";
  ASSERT_EQ(run({"train", "examples/fashion_mnist_tfrecord.toml", "--quiet", "--metrics-json",
                 metrics, "--set", "data.train_files=" + dir_ + "/fm/train*.tfrecord", "--set",
                 "data.test_files=" + dir_ + "/fm/test*.tfrecord", "--set", "training.epochs=2",
                 "--set", "output.dir=" + dir_ + "/fm_run"},
                cmd_train),
            0);
  nlohmann::json j = nlohmann::json::parse(io::read_file(metrics));
  EXPECT_EQ(j["monitor"]["steps"].get<int64_t>(), 2);  // 96 records: one batch of 128 per epoch
  EXPECT_TRUE(j.contains("test_accuracy"));
}

TEST_F(PipelineCommand, TrainsFromImageFolders) {
  // PNG files in one folder per class; validation is a seeded 25% of the training files.
  for (const auto& [split, n, seed] : {std::tuple{"train", 256, 7}, std::tuple{"test", 64, 8}}) {
    Samples s = make_samples(n, static_cast<uint64_t>(seed));
    for (size_t i = 0; i < s.images.size(); ++i) {
      std::string folder = dir_ + "/images/" + split + "/class" + std::to_string(s.labels[i]);
      std::filesystem::create_directories(folder);
      Tensor img(DType::kU8, Shape{8, 8, 1});
      std::memcpy(img.raw_data(), s.images[i].data(), 64);
      data::write_file_bytes(folder + "/" + std::to_string(i) + ".png", data::encode_png(img));
    }
  }
  std::string cfg = config(
      "[data]\nsource = \"image_dir\"\nnum_classes = 4\nvalidation_split = 0.25\ntrain_dir = \"" +
          dir_ + "/images/train\"\ntest_dir = \"" + dir_ + "/images/test\"\n" +
          "[data.image_dir]\nimage_size = [8, 8]\nchannels = 1\n" +
          "[[data.transforms]]\nop = \"map\"\nfn = \"scale\"\n",
      4);
  nlohmann::json j = train(cfg);
  EXPECT_GT(j["test_accuracy"].get<double>(), 0.9) << j.dump();
  EXPECT_EQ(j["monitor"]["steps"].get<int64_t>(), 4 * 6);  // 192 training files, batch 32
}

// --- errors ---

TEST_F(PipelineCommand, RecordsThatDoNotMatchTheSpecFailWhenTraining) {
  std::string base = tfrecord_data(kTFRecordTransforms);
  std::string cfg = config(base + "");
  std::string text = io::read_file(cfg);
  // The records hold int64 labels; a float spec fails when parsing, naming the feature.
  std::string bad = text;
  bad.replace(bad.find("label = {type = \"int64\"}"), 24, "label = {type = \"float\"}");
  std::ofstream(cfg) << bad;
  EXPECT_TERN_ERROR(run({"train", cfg, "--quiet"}, cmd_train), ErrorCode::kInvalidArgument,
                    "label");
  // u8 pixels straight into the model.
  bad = text;
  bad.replace(bad.find("fn = \"scale\""), 12, "fn = \"reshape\"\nshape = [64]");
  std::ofstream(cfg) << bad;
  EXPECT_TERN_ERROR(run({"train", cfg, "--quiet"}, cmd_train), ErrorCode::kInvalidArgument,
                    "add a [[data.transforms]] op = \"map\"");
  // No file matches the pattern.
  bad = text;
  bad.replace(bad.find("/train-*"), 8, "/nothing-*");
  std::ofstream(cfg) << bad;
  EXPECT_TERN_ERROR(run({"train", cfg, "--quiet"}, cmd_train), ErrorCode::kNotFound, "nothing-*");
}

}  // namespace
}  // namespace tern::tools
