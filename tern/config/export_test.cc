// Export of image-folder pipeline configs: the served model takes encoded JPEG / PNG bytes and
// gives logits bit-identical to Model::predict on the tensors the config's evaluation pipeline
// yields for the same files; undecodable bytes and wrong sizes are InvalidArgument errors naming
// the input.
#include "tern/config/export.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "tern/config/builders.h"
#include "tern/config/training_data.h"
#include "tern/data/image_codec.h"
#include "tern/data/image_folder.h"
#include "tern/data/tfrecord_writer.h"
#include "tern/serve/loaded_model.h"
#include "tests/support/random_tensor.h"

namespace tern::config {
namespace {

namespace fs = std::filesystem;

Tensor pattern(int64_t h, int64_t w, int64_t seed) {
  Tensor t(DType::kU8, Shape{h, w, 3});
  uint8_t* p = t.data<uint8_t>();
  for (int64_t i = 0; i < t.num_elements(); ++i)
    p[i] = static_cast<uint8_t>((i * 13 + seed * 29 + (i / 7) * seed) % 256);
  return t;
}

class ExportImages : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "/tern_export_images";
    fs::remove_all(dir_);
    fs::create_directories(dir_ + "/images/a_cat");
    fs::create_directories(dir_ + "/images/b_dog");
  }

  // root/{a_cat, b_dog}: PNG and JPEG files of the given sizes, alternating between classes.
  void write_images(const std::vector<std::pair<int64_t, int64_t>>& sizes) {
    for (size_t i = 0; i < sizes.size(); ++i) {
      Tensor img = pattern(sizes[i].first, sizes[i].second, static_cast<int64_t>(i) + 1);
      std::string cls = i % 2 == 0 ? "a_cat" : "b_dog";
      std::string base = str_cat(dir_, "/images/", cls, "/", i);
      if (i % 3 == 1) {
        data::write_file_bytes(base + ".jpg", data::encode_jpeg(img, 90));
      } else {
        data::write_file_bytes(base + ".png", data::encode_png(img));
      }
    }
  }

  TrainConfig config(const std::string& image_dir, const std::string& transforms) {
    return config_text("[data]\nsource = \"image_dir\"\nnum_classes = 2\ntrain_dir = \"" + dir_ +
                       "/images\"\ntest_dir = \"" + dir_ + "/images\"\n[data.image_dir]\n" +
                       image_dir + transforms);
  }

  // `data`: the [data] section and its transforms (a batch transform is added).
  TrainConfig config_text(const std::string& data) {
    std::string path = dir_ + "/cfg.toml";
    std::ofstream(path) << "[model]\nname = \"cnn\"\n[model.args]\nfilters = [2]\n"
                        << "dense_units = 4\n"
                        << data << "[[data.transforms]]\nop = \"batch\"\nsize = 2\n"
                        << "[loss]\nname = \"sparse_categorical_crossentropy\"\n"
                        << "[training]\nepochs = 1\nbatch_size = 2\nseed = 7\n"
                        << "[output]\ndir = \"" << dir_ << "/run\"\n";
    return load_config(path);
  }

  // Exports `cfg` with seeded weights; returns the model (for predict) and the loaded servable.
  std::pair<std::shared_ptr<nn::Model>, serve::ServablePtr> export_and_load(
      const TrainConfig& cfg) {
    TrainingData td = make_training_data(cfg, /*with_train=*/false);
    std::shared_ptr<nn::Model> model = make_model(cfg, td.sample_shape);
    model->build();
    std::string weights = dir_ + "/weights.safetensors";
    model->save_weights(weights);
    std::string out = dir_ + "/model/1";
    steps_.clear();
    export_from_config(cfg, out, weights, [&](int k, const std::string& what) {
      steps_.push_back({k, what});
    });
    return {model, serve::load(out)};
  }
  std::vector<std::pair<int, std::string>> steps_;  // what the last export reported

  // The evaluation pipeline's inputs for every test file, stacked.
  Tensor eval_inputs(const TrainConfig& cfg) {
    return first_rows(make_training_data(cfg, false).test, -1)[0];
  }

  // The encoded bytes of every file, in the order the image_dir source lists them.
  serve::TensorValue encoded_files() {
    serve::TensorValue v;
    v.dtype = serve::WireDType::kString;
    for (const auto& f : data::list_image_folder(dir_ + "/images", {}).files)
      v.strings.push_back(data::read_file_bytes(f));
    v.shape = {static_cast<int64_t>(v.strings.size())};
    return v;
  }

  static void expect_bitwise_equal(const Tensor& got, const Tensor& want) {
    ASSERT_EQ(got.shape(), want.shape());
    int64_t mismatches = 0;
    for (int64_t i = 0; i < got.num_elements(); ++i)
      mismatches += got.data<float>()[i] != want.data<float>()[i];
    EXPECT_EQ(mismatches, 0) << "served logits differ from Model::predict";
  }

  std::string dir_;
};

// image_dir (decode + resize to 12x12) -> center_crop 10x10 -> random_flip (dropped) ->
// normalize: the source's resize and the crop run in the decoder, normalize in the graph.
TEST_F(ExportImages, ImageDirPngAndJpegMatchTheEvalPipelineBitForBit) {
  write_images({{10, 12}, {12, 10}, {12, 12}, {16, 9}, {7, 7}});
  TrainConfig cfg = config("image_size = [12, 12]\n",
                           "[[data.transforms]]\nop = \"map\"\nfn = \"center_crop\"\n"
                           "size = [10, 10]\n"
                           "[[data.transforms]]\nop = \"map\"\nfn = \"random_flip\"\n"
                           "[[data.transforms]]\nop = \"map\"\nfn = \"normalize\"\n"
                           "mean = [0.4, 0.5, 0.6]\nstd = [0.2, 0.25, 0.3]\n");
  serve::ExportOptions o = export_options(cfg);
  EXPECT_EQ(o.input.decoder.kind, serve::DecoderKind::kImage);
  EXPECT_EQ(o.input.decoder.height, 12);
  ASSERT_EQ(o.input.decoder.steps.size(), 1u);
  EXPECT_EQ(o.input.decoder.steps[0].kind, data::ElementFnKind::kCenterCrop);
  EXPECT_EQ(o.input.shape, (Shape{10, 10, 3}));
  ASSERT_EQ(o.input.preprocessing.size(), 2u);  // random_flip (dropped when traced), normalize

  auto [model, servable] = export_and_load(cfg);
  // Issue 16: every stage is reported for the progress line, tracing and the self-check apart
  // from writing (before, one step covered all three).
  const std::vector<std::pair<int, std::string>> steps = {
      {1, "reading the data's shape"},
      {2, "building the model"},
      {3, "loading the weights"},
      {4, "tracing the inference graph"},
      {5, "self-check (traced again at batch 3)"},
      {6, "writing the model directory"}};
  EXPECT_EQ(steps_, steps);
  EXPECT_EQ(kExportSteps, 6);
  const serve::Signature& sig = servable->signatures().at(serve::kDefaultSignature);
  EXPECT_EQ(sig.inputs.at("images").dtype, serve::WireDType::kString);
  EXPECT_EQ(sig.inputs.at("images").shape, std::vector<int64_t>{-1});

  Tensor x = eval_inputs(cfg);
  ASSERT_EQ(x.shape(), (Shape{5, 10, 10, 3}));
  Tensor want = model->predict(x, 5);
  serve::TensorMap out = servable->run(serve::kDefaultSignature, {{"images", encoded_files()}});
  expect_bitwise_equal(out.at("logits").numbers, want);
}

// A resize map after the source (bilinear: f32 into the graph) and a scale.
TEST_F(ExportImages, ResizeMapGivesAnF32DecoderOutputAndMatches) {
  write_images({{9, 11}, {14, 8}, {9, 9}});
  TrainConfig cfg = config("image_size = [9, 9]\n",
                           "[[data.transforms]]\nop = \"map\"\nfn = \"resize\"\n"
                           "size = [8, 6]\n"
                           "[[data.transforms]]\nop = \"map\"\nfn = \"scale\"\n");
  serve::ExportOptions o = export_options(cfg);
  EXPECT_EQ(o.input.dtype, DType::kF32);
  EXPECT_EQ(o.input.shape, (Shape{8, 6, 3}));
  auto [model, servable] = export_and_load(cfg);
  Tensor want = model->predict(eval_inputs(cfg), 3);
  serve::TensorMap out = servable->run(serve::kDefaultSignature, {{"images", encoded_files()}});
  expect_bitwise_equal(out.at("logits").numbers, want);
}

// decode = false + read_image: no resize, so requests must send the training images' size.
TEST_F(ExportImages, WithoutResizeEqualSizesAreRequiredAndCorruptBytesAreNamed) {
  write_images({{8, 8}, {8, 8}, {8, 8}});
  TrainConfig cfg = config("decode = false\n",
                           "[[data.transforms]]\nop = \"map\"\nfn = \"read_image\"\n"
                           "channels = 3\n"
                           "[[data.transforms]]\nop = \"map\"\nfn = \"scale\"\n");
  auto [model, servable] = export_and_load(cfg);
  Tensor want = model->predict(eval_inputs(cfg), 3);
  serve::TensorMap out = servable->run(serve::kDefaultSignature, {{"images", encoded_files()}});
  expect_bitwise_equal(out.at("logits").numbers, want);

  serve::TensorValue v = encoded_files();
  v.strings[1] = data::encode_png(pattern(6, 8, 3));
  EXPECT_TERN_ERROR(servable->run(serve::kDefaultSignature, {{"images", v}}),
                    ErrorCode::kInvalidArgument,
                    "input 'images' example 1: decoded image is [6, 8, 3] but the model takes "
                    "[8, 8, 3]");
  v = encoded_files();
  v.strings[2] = v.strings[2].substr(0, 20);  // truncated
  EXPECT_TERN_ERROR(servable->run(serve::kDefaultSignature, {{"images", v}}),
                    ErrorCode::kInvalidArgument, "input 'images' example 2");
  v.strings[2] = "not an image";
  EXPECT_TERN_ERROR(servable->run(serve::kDefaultSignature, {{"images", v}}),
                    ErrorCode::kInvalidArgument, "input 'images' example 2");
}

// A crop after a value-changing function cannot move before the graph.
TEST_F(ExportImages, GeometryAfterValueStepsIsRefused) {
  write_images({{8, 8}});
  TrainConfig cfg = config("image_size = [8, 8]\n",
                           "[[data.transforms]]\nop = \"map\"\nfn = \"scale\"\n"
                           "[[data.transforms]]\nop = \"map\"\nfn = \"center_crop\"\n"
                           "size = [4, 4]\n");
  EXPECT_TERN_ERROR(export_options(cfg), ErrorCode::kInvalidArgument,
                    "center_crop after value-changing functions");
}

// tfrecord + parse: the served model takes serialized tf.Examples, parsed by the config's feature
// spec (raw u8 pixels as one bytes value, tf.io.decode_raw), then scale in the graph.
TEST_F(ExportImages, TFRecordTakesSerializedExamplesParsedByTheFeatureSpec) {
  serve::TensorValue v;
  v.dtype = serve::WireDType::kString;
  {
    data::TFRecordWriter w(dir_ + "/test-0.tfrecord");
    for (int64_t i = 0; i < 3; ++i) {
      Tensor img = pattern(6, 6, i + 1);
      data::Example ex;
      ex.features["image"] = data::Feature::bytes(
          {std::string(static_cast<const char*>(img.raw_data()), img.nbytes())});
      ex.features["label"] = data::Feature::int64s({i % 2});
      v.strings.push_back(data::serialize_example(ex));
      w.write(v.strings.back());
    }
  }
  v.shape = {3};
  TrainConfig cfg = config_text(
      "[data]\nsource = \"tfrecord\"\nnum_classes = 2\ntrain_files = \"" + dir_ +
      "/test-*.tfrecord\"\ntest_files = \"" + dir_ + "/test-*.tfrecord\"\n" +
      "[data.features]\nimage = {type = \"bytes\", dtype = \"u8\", shape = [6, 6, 3]}\n" +
      "label = {type = \"int64\"}\n" + "[[data.transforms]]\nop = \"parse\"\n" +
      "[[data.transforms]]\nop = \"map\"\nfn = \"scale\"\n");
  serve::ExportOptions o = export_options(cfg);
  EXPECT_EQ(o.input.decoder.kind, serve::DecoderKind::kExample);
  EXPECT_EQ(o.input.decoder.feature, "image");
  EXPECT_EQ(o.input.shape, (Shape{6, 6, 3}));
  auto [model, servable] = export_and_load(cfg);
  const serve::Signature& sig = servable->signatures().at(serve::kDefaultSignature);
  EXPECT_EQ(sig.inputs.at("inputs").dtype, serve::WireDType::kString);
  Tensor want = model->predict(eval_inputs(cfg), 3);
  serve::TensorMap out = servable->run(serve::kDefaultSignature, {{"inputs", v}});
  expect_bitwise_equal(out.at("logits").numbers, want);

  data::Example bad;
  bad.features["image"] = data::Feature::bytes({"too short"});
  v.strings[1] = data::serialize_example(bad);
  EXPECT_TERN_ERROR(servable->run(serve::kDefaultSignature, {{"inputs", v}}),
                    ErrorCode::kInvalidArgument, "input 'inputs' example 1");
}

}  // namespace
}  // namespace tern::config
