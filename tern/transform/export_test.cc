// The training/serving skew test on real tabular data: UCI Automobile (python3-statsmodels'
// autos.csv: 205 cars, numeric columns with missing values, categorical ones) as tf.Examples; the
// transform analyzed on a training split and applied to it; a small model trained a few steps on
// the transformed data and exported with the transform in front (test_util.h); then the eval
// split's RAW features (numbers with NaN for missing ones, strings) through serve::load_servable
// give the outputs the transformed eval data gives through the trained model (to 1e-6). Also what
// the exported directory declares: raw inputs by name, the fingerprint decoder, nullable inputs.
#include "tern/transform/export.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <iostream>

#include "tern/io/atomic_file.h"
#include "tern/models/zoo.h"
#include "tern/serve/model_dir.h"
#include "tern/transform/test_util.h"

namespace tern::transform {
namespace {

TEST(TransformExport, RawFeaturesThroughTheServedModelMatchTheTrainedModel) {
  if (!std::filesystem::exists(testing::kAutosCsv))
    GTEST_SKIP() << testing::kAutosCsv << " not installed (python3-statsmodels)";
  testing::TempDir dir;
  testing::AutosModel m = testing::train_and_export_autos(dir.path);
  ASSERT_EQ(m.train.size(), 164u);
  ASSERT_EQ(m.eval.size(), 41u);
  EXPECT_LT(m.losses.back(), m.losses.front());
  TransformArtifact artifact = read_transform_artifact(dir / "transform");
  EXPECT_EQ(artifact.class_names, (std::vector<std::string>{"4wd", "fwd", "rwd"}));
  EXPECT_GT(artifact.analysis.features[2].missing, 0);  // loss: missing in the CSV

  serve::ServablePtr served = serve::load_servable(m.model_dir);
  const serve::Signature& sig = served->signatures().at("serving_default");
  EXPECT_EQ(sig.inputs.size(), m.spec.raw_features().size());
  EXPECT_EQ(sig.inputs.at("make").dtype, serve::WireDType::kString);
  EXPECT_TRUE(sig.inputs.at("make").nullable);
  EXPECT_EQ(sig.inputs.at("price").dtype, serve::WireDType::kFloat);
  EXPECT_EQ(sig.inputs.at("price").shape, (std::vector<int64_t>{-1}));
  EXPECT_TRUE(sig.inputs.at("price").nullable);
  EXPECT_EQ(io::read_file(m.model_dir + "/assets/class_names.txt"), "4wd\nfwd\nrwd\n");
  serve::ModelDirContents contents = serve::read_model_dir(m.model_dir);
  EXPECT_EQ(contents.signatures.at("serving_default").decoders.at("make").kind,
            serve::DecoderKind::kFingerprint);

  serve::TensorMap out = served->run("serving_default", testing::raw_request(m.spec, m.eval));
  const Tensor& got = out.at("logits").numbers;
  const Tensor& want = m.want_logits;
  ASSERT_EQ(got.shape(), want.shape());
  double worst = 0;
  for (int64_t i = 0; i < got.num_elements(); ++i)
    worst = std::max(worst,
                     std::abs(static_cast<double>(got.data<float>()[i]) - want.data<float>()[i]));
  EXPECT_LE(worst, 1e-6) << "served raw features vs transformed data through the model";
  std::cout << "[ skew ] " << got.num_elements()
            << " logits, worst |served(raw) - model(transformed)| = " << worst << "\n";
  const Tensor& classes = out.at("classes").numbers;
  for (int64_t i = 0; i < classes.num_elements(); ++i) {
    const float* row = want.data<float>() + i * 3;
    EXPECT_EQ(classes.data<int64_t>()[i], std::max_element(row, row + 3) - row);
  }
  // One car at a time gives the same (another batch size: the rebatched graph).
  serve::TensorMap one = served->run("serving_default", testing::raw_request(m.spec, {m.eval[3]}));
  for (int k = 0; k < 3; ++k)
    EXPECT_NEAR(one.at("logits").numbers.data<float>()[k], want.data<float>()[3 * 3 + k], 1e-6);
  // A request without the raw features is refused.
  EXPECT_THROW(served->run("serving_default", {}), Error);
}

TEST(TransformExport, ImagesKeepTheirShapeForACnn) {
  // Raw u8 pixels (the Fashion-MNIST layout at 6x6): z_score over all pixels, int64 labels.
  testing::TempDir dir;
  std::vector<data::Example> images;
  for (int i = 0; i < 24; ++i) {
    std::string px(36, '\0');
    for (int p = 0; p < 36; ++p)
      px[static_cast<size_t>(p)] = static_cast<char>((i * 37 + p * 11) % 256);
    images.push_back(testing::example({{"image/encoded", data::Feature::bytes({px})},
                                       {"image/class/label", data::Feature::int64s({i % 3})}}));
  }
  testing::write_examples(dir / "img.tfrecord", images);
  TransformSpec spec = parse_transform_spec(
      "[transform]\nlabel = \"image/class/label\"\n[[transform.features]]\n"
      "input = \"image/encoded\"\nop = \"z_score\"\nshape = [6, 6, 1]\n",
      "img.toml");
  TransformArtifact a = make_transform_artifact(spec, analyze(spec, {dir / "img.tfrecord"}));
  EXPECT_EQ(a.output_shape, (std::vector<int64_t>{6, 6, 1}));
  EXPECT_EQ(a.class_names, (std::vector<std::string>{"0", "1", "2"}));
  apply_transform(a, {dir / "img.tfrecord"}, dir / "t.tfrecord");
  auto [x, y] = testing::read_transformed_xy(dir / "t.tfrecord", 36);
  auto model = models::build_model(
      "cnn", {6, 6, 1}, 3, {{"filters", std::vector<int64_t>{2}}, {"dense_units", int64_t{4}}});
  const Tensor want = model->predict(x.reshape(Shape{24, 6, 6, 1}), 8);
  export_with_transform(*model, a, {}, dir / "m/1");
  serve::ServablePtr served = serve::load_servable(dir / "m/1");
  EXPECT_EQ(served->signatures().at("serving_default").inputs.at("image/encoded").shape,
            (std::vector<int64_t>{-1, 6, 6, 1}));
  Tensor raw(DType::kU8, Shape{24, 6, 6, 1});
  for (int i = 0; i < 24; ++i)
    std::memcpy(raw.data<uint8_t>() + i * 36,
                images[static_cast<size_t>(i)].features.at("image/encoded").bytes_list[0].data(),
                36);
  serve::TensorMap in;
  in["image/encoded"] = serve::TensorValue::from_tensor(raw);
  const serve::TensorMap out = served->run("serving_default", in);
  const Tensor& got = out.at("logits").numbers;
  ASSERT_EQ(got.shape(), want.shape());
  for (int64_t i = 0; i < got.num_elements(); ++i)
    EXPECT_NEAR(got.data<float>()[i], want.data<float>()[i], 1e-6) << i;
}

}  // namespace
}  // namespace tern::transform
