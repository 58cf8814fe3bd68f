// The [data] input-pipeline keys read into a data::PipelineSpec: errors with file, line and
// suggestion; keys that apply to another op or fn; the one-line language of `tern data bench`
// and the equivalent [data] section giving the same spec and the same elements.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "tern/config/config.h"
#include "tern/data/iterator.h"
#include "tern/data/pipeline_line.h"
#include "tern/io/atomic_file.h"
#include "tests/support/idx_writer.h"
#include "tests/support/random_tensor.h"

namespace tern::config {
namespace {

class PipelineConfig : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "/tern_pipeline_config";
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
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

  std::string dir_;
};

const char* kTFRecordTransforms =
    "[[data.transforms]]\nop = \"shuffle\"\nbuffer = 1000\n"
    "[[data.transforms]]\nop = \"parse\"\n"
    "[[data.transforms]]\nop = \"map\"\nfn = \"scale\"\n"
    "[[data.transforms]]\nop = \"batch\"\nsize = 32\n"
    "[[data.transforms]]\nop = \"prefetch\"\n";

// "cfg.toml:N" for the line holding `marker`.
std::string line_of(const std::string& path, const std::string& marker) {
  std::istringstream in(io::read_file(path));
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    if (line.find(marker) != std::string::npos) return path + ":" + std::to_string(n) + ":";
  }
  return "marker not found";
}

TEST_F(PipelineConfig, BadOpIsAnErrorWithLineAndSuggestion) {
  std::string cfg = config(
      tfrecord_data("[[data.transforms]]\nop = \"parse\"\n[[data.transforms]]\nop = \"shufle\"\n"));
  EXPECT_TERN_ERROR(load_config(cfg), ErrorCode::kInvalidArgument, line_of(cfg, "\"shufle\""));
  EXPECT_TERN_ERROR(load_config(cfg), ErrorCode::kInvalidArgument, "did you mean 'shuffle'");
  cfg =
      config(tfrecord_data("[[data.transforms]]\nop = \"parse\"\n[[data.transforms]]\nop = "
                           "\"map\"\nfn = \"normalise\"\n"));
  EXPECT_TERN_ERROR(load_config(cfg), ErrorCode::kInvalidArgument, "did you mean 'normalize'");
  cfg = config(tfrecord_data(
      "[[data.transforms]]\nop = \"parse\"\n[[data.transforms]]\nop = \"shuffle\"\nbufer = 9\n"));
  EXPECT_TERN_ERROR(load_config(cfg), ErrorCode::kInvalidArgument, line_of(cfg, "bufer"));
  EXPECT_TERN_ERROR(load_config(cfg), ErrorCode::kInvalidArgument,
                    "did you mean 'data.transforms[1].buffer'");
  // A key of another function, or of another op.
  cfg =
      config(tfrecord_data("[[data.transforms]]\nop = \"parse\"\n[[data.transforms]]\nop = "
                           "\"map\"\nfn = \"scale\"\ndepth = 3\n"));
  EXPECT_TERN_ERROR(load_config(cfg), ErrorCode::kInvalidArgument,
                    line_of(cfg, "depth") +
                        " data.transforms[1].depth does not apply to fn 'scale' (its keys: factor, "
                        "component, parallel, deterministic, seed, apply_to)");
  cfg = config(tfrecord_data(
      "[[data.transforms]]\nop = \"parse\"\n[[data.transforms]]\nop = \"batch\"\nbuffer = 9\n"));
  EXPECT_TERN_ERROR(load_config(cfg), ErrorCode::kInvalidArgument,
                    "data.transforms[1].buffer does not apply to op 'batch' (its keys: size, "
                    "drop_remainder, apply_to)");
  // tfrecord without parse; parse after batch; an endless repeat without steps_per_epoch.
  cfg = config(tfrecord_data(""));
  EXPECT_TERN_ERROR(load_config(cfg), ErrorCode::kInvalidArgument,
                    "needs a [[data.transforms]] with op = \"parse\"");
  // Parse right after a batch parses batches; further away it would see batched records.
  cfg = config(
      tfrecord_data("[[data.transforms]]\nop = \"batch\"\n[[data.transforms]]\nop = \"parse\"\n"));
  EXPECT_NO_THROW(load_config(cfg));
  cfg = config(
      tfrecord_data("[[data.transforms]]\nop = \"batch\"\n[[data.transforms]]\nop = \"cache\"\n"
                    "[[data.transforms]]\nop = \"parse\"\n"));
  EXPECT_TERN_ERROR(load_config(cfg), ErrorCode::kInvalidArgument, "must come before the batch");
  cfg = config(
      tfrecord_data("[[data.transforms]]\nop = \"parse\"\n[[data.transforms]]\nop = \"repeat\"\n"));
  EXPECT_TERN_ERROR(load_config(cfg), ErrorCode::kInvalidArgument,
                    "needs training.steps_per_epoch");
  // Keys of the other data path.
  std::string with_buffer = tfrecord_data(kTFRecordTransforms);
  with_buffer.insert(with_buffer.find("[data]\n") + 7, "shuffle_buffer = 10\n");
  cfg = config(with_buffer);
  EXPECT_TERN_ERROR(load_config(cfg), ErrorCode::kInvalidArgument,
                    "data.shuffle_buffer is for data.dataset");
  cfg = config("[data]\ndataset = \"idx\"\ntrain_files = \"x\"\n");
  EXPECT_TERN_ERROR(load_config(cfg), ErrorCode::kInvalidArgument,
                    "key 'data.train_files' needs data.source");
}

TEST_F(PipelineConfig, MissingFeatureAndWrongTypesAreErrors) {
  std::string base = tfrecord_data(kTFRecordTransforms);
  std::string cfg = config(base + "");
  std::string text = io::read_file(cfg);
  // data.label names no feature.
  std::string bad = text;
  bad.replace(bad.find("label = {type"), 5, "class");
  std::ofstream(cfg) << bad;
  EXPECT_TERN_ERROR(load_config(cfg), ErrorCode::kInvalidArgument,
                    "data.label = 'label' is not a feature");
  // A feature type that does not exist.
  bad = text;
  bad.replace(bad.find("\"int64\"}"), 7, "\"int\"");
  std::ofstream(cfg) << bad;
  EXPECT_TERN_ERROR(load_config(cfg), ErrorCode::kInvalidArgument, "did you mean 'int64'");
  // A shuffle buffer that is not a number.
  bad = text;
  bad.replace(bad.find("buffer = 1000"), 13, "buffer = \"big\"");
  std::ofstream(cfg) << bad;
  EXPECT_TERN_ERROR(load_config(cfg), ErrorCode::kInvalidArgument, "must be an integer");
}

TEST_F(PipelineConfig, TheOneLineLanguageGivesTheSameSpecAndElements) {
  std::vector<uint8_t> images, labels;
  for (int i = 0; i < 12; ++i) {
    labels.push_back(static_cast<uint8_t>(i % 3));
    for (int p = 0; p < 30; ++p) images.push_back(static_cast<uint8_t>(i * 20 + p * 3));
  }
  const std::string im = dir_ + "/images.idx", lb = dir_ + "/labels.idx";
  ::tern::testing::write_idx_u8(im, {12, 6, 5}, images);
  ::tern::testing::write_idx_u8(lb, {12}, labels);
  std::string cfg = config("[data]\nsource = \"idx\"\nnum_classes = 3\ntrain_images = \"" + im +
                           "\"\ntrain_labels = \"" + lb + "\"\ntest_images = \"" + im +
                           "\"\ntest_labels = \"" + lb + "\"\n" +
                           "[[data.transforms]]\nop = \"shuffle\"\nbuffer = 6\nseed = 9\n"
                           "[[data.transforms]]\nop = \"map\"\nfn = \"random_crop\"\n"
                           "size = [4, 4]\nparallel = -1\n"
                           "[[data.transforms]]\nop = \"map\"\nfn = \"random_brightness\"\n"
                           "max_delta = 0.2\nparallel = -1\n"
                           "[[data.transforms]]\nop = \"map\"\nfn = \"normalize\"\nmean = 0.5\n"
                           "std = 0.25\nparallel = -1\n"
                           "[[data.transforms]]\nop = \"batch\"\nsize = 4\ndrop_remainder = true\n"
                           "[[data.transforms]]\nop = \"prefetch\"\nbuffer = 2\n");
  TrainConfig c = load_config(cfg, {"training.seed=40"});
  data::PipelineLine line = data::parse_pipeline_line(
      "idx " + im + " " + lb +
          " | shuffle 6 seed=9 | crop 4 4 | brightness 0.2 | normalize mean=0.5 std=0.25 | "
          "batch 4 drop_remainder | prefetch 2",
      {.map_threads = data::kAutotune, .seed = 40});
  EXPECT_EQ(line.spec.source.kind, c.data.pipeline.source.kind);
  EXPECT_EQ(line.inputs, c.data.train_inputs);
  const auto& toml = c.data.pipeline.transforms;
  ASSERT_EQ(line.spec.transforms.size(), toml.size());
  for (size_t i = 0; i < toml.size(); ++i) {
    data::TransformSpec t = line.spec.transforms[i];
    EXPECT_NE(t.origin, toml[i].origin);  // "pipeline stage 3 'crop 4 4'" vs "cfg.toml:9 (...)"
    t.origin = toml[i].origin;
    EXPECT_EQ(t, toml[i]) << toml[i].origin;
  }
  for (auto mode : {data::PipelineMode::kTrain, data::PipelineMode::kEval}) {
    std::vector<data::Element> a =
        data::build_input_pipeline(line.spec, line.inputs, mode)->make_iterator(1).take();
    std::vector<data::Element> b =
        data::build_input_pipeline(c.data.pipeline, c.data.train_inputs, mode)
            ->make_iterator(1)
            .take();
    ASSERT_EQ(a.size(), 3u);
    ASSERT_EQ(b.size(), a.size());
    for (size_t i = 0; i < a.size(); ++i) {
      EXPECT_EQ(data::element_signature(a[i]), "(f32[4, 4, 4, 1], i64[4])");
      EXPECT_TRUE(bitwise_equal(a[i][0], b[i][0])) << i;
      EXPECT_TRUE(bitwise_equal(a[i][1], b[i][1])) << i;
    }
  }
}

}  // namespace
}  // namespace tern::config
