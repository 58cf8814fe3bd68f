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
#include <filesystem>
#include <iostream>

#include "tern/io/atomic_file.h"
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
    worst = std::max(worst, std::abs(static_cast<double>(got.data<float>()[i]) -
                                     want.data<float>()[i]));
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

}  // namespace
}  // namespace tern::transform
