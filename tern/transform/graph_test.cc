// The transform graph: its ops for a small spec, the round trip through the IR text format and
// rebatching, the artifact directory (written, read back, a stale graph refused), and
// apply_transform on a small TFRecord with every value checked by hand (missing numbers filled,
// OOV values, bucket indices, labels through the label vocabulary, input order kept).
#include "tern/transform/graph.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

#include "tern/base/fingerprint.h"
#include "tern/data/example_parser.h"
#include "tern/io/atomic_file.h"
#include "tern/ir/parser.h"
#include "tern/ir/printer.h"
#include "tern/serve/rebatch.h"
#include "tern/transform/apply.h"
#include "tern/transform/artifact.h"
#include "tern/transform/records.h"
#include "tern/transform/test_util.h"

namespace tern::transform {
namespace {

using data::Feature;
using testing::example;

constexpr const char* kSpec = R"([transform]
label = "fuel"
[[transform.features]]
input = "price"
op = "z_score"
[[transform.features]]
input = "make"
op = "vocabulary"
[[transform.features]]
input = "weight"
op = "bucketize"
num_buckets = 2
output = "index"
[[transform.features]]
inputs = ["make", "style"]
op = "cross"
hash_buckets = 3
output = "index"
)";

std::vector<data::Example> cars() {
  return {
      example({{"price", Feature::floats({10})}, {"make", Feature::bytes({"audi"})},
               {"style", Feature::bytes({"sedan"})}, {"fuel", Feature::bytes({"gas"})},
               {"weight", Feature::int64s({1})}}),
      example({{"price", Feature::int64s({20})}, {"make", Feature::bytes({"bmw"})},
               {"style", Feature::bytes({"wagon"})}, {"fuel", Feature::bytes({"diesel"})},
               {"weight", Feature::int64s({2})}}),
      example({{"make", Feature::bytes({"audi"})}, {"style", Feature::bytes({"sedan"})},
               {"fuel", Feature::bytes({"gas"})}, {"weight", Feature::int64s({3})}}),
      example({{"price", Feature::floats({30})}, {"make", Feature::bytes({"volvo"})},
               {"fuel", Feature::bytes({"gas"})}, {"weight", Feature::int64s({4})}}),
      example({{"price", Feature::floats({40})}, {"make", Feature::bytes({"bmw"})},
               {"style", Feature::bytes({"sedan"})}, {"fuel", Feature::bytes({"gas"})},
               {"weight", Feature::floats({5})}}),
      example({{"price", Feature::floats({50})}, {"make", Feature::bytes({""})},
               {"style", Feature::bytes({"hatch"})}, {"fuel", Feature::bytes({"diesel"})}}),
  };
}

struct Fixture {
  testing::TempDir dir;
  TransformSpec spec = parse_transform_spec(kSpec, "t.toml");
  TransformAnalysis analysis;
  Fixture() {
    testing::write_examples(dir / "cars.tfrecord", cars());
    analysis = analyze(spec, {dir / "cars.tfrecord"});
  }
};

// The x and label features of every record of `path`.
std::vector<std::pair<std::vector<float>, int64_t>> read_transformed(const std::string& path) {
  std::vector<std::pair<std::vector<float>, int64_t>> out;
  RecordBlocks blocks(path);
  std::vector<std::string_view> records;
  while (blocks.next(records)) {
    for (std::string_view r : records) {
      data::Example e = data::parse_example_proto(r);
      EXPECT_EQ(e.features.size(), 2u);
      out.emplace_back(e.features.at("x").float_list, e.features.at("label").int64_list.at(0));
    }
  }
  return out;
}

// The cross's bucket, computed the way the ops define it.
int64_t cross_bucket(std::string_view a, std::string_view b, int64_t n) {
  uint64_t h = kFnv64OffsetBasis;
  h = mix64(h ^ fingerprint64(a));
  h = mix64(h ^ fingerprint64(b));
  return static_cast<int64_t>(mix64(h) % static_cast<uint64_t>(n));
}

TEST(TransformGraph, OpsRoundTripAndRebatch) {
  Fixture f;
  auto g = build_transform_graph(f.spec, f.analysis, 1);
  const std::string text = ir::print_graph(*g);
  for (const char* op : {"not_equal(", "where(", "vocab_lookup(", "one_hot(", "bucketize(",
                         "fingerprint_combine(", "hash_bucket(", "concat("})
    EXPECT_NE(text.find(op), std::string::npos) << op << "\n" << text;
  EXPECT_EQ(ir::print_graph(*ir::parse_graph(text, "transform.tern")), text);
  // Inputs: the raw features; output x: 1 + (4 + 1) + 1 + 1 columns.
  EXPECT_EQ(g->find_input("price")->output()->type(), (TensorType{DType::kF32, Shape{1}}));
  EXPECT_EQ(g->find_input("make")->output()->type(), (TensorType{DType::kI64, Shape{1}}));
  EXPECT_EQ(g->outputs()[0].name, "x");
  EXPECT_EQ(g->outputs()[0].value->type(), (TensorType{DType::kF32, Shape{1, 8}}));
  EXPECT_EQ(transform_output_shape(f.spec, f.analysis), (std::vector<int64_t>{8}));
  auto g5 = serve::rebatch(*g, 5);
  EXPECT_EQ(g5->outputs()[0].value->type(), (TensorType{DType::kF32, Shape{5, 8}}));
  EXPECT_EQ(serve::first_graph_difference(*g5, *build_transform_graph(f.spec, f.analysis, 5)), "");
}

TEST(TransformGraph, ApplyComputesEveryValue) {
  Fixture f;
  write_transform_artifact(f.spec, f.analysis, f.dir / "artifact");
  TransformArtifact a = read_transform_artifact(f.dir / "artifact");
  EXPECT_EQ(a.output_dim, 8);
  EXPECT_EQ(a.class_names, (std::vector<std::string>{"diesel", "gas"}));
  // Eval data: an unseen make, a missing make, the training records again.
  std::vector<data::Example> eval = cars();
  eval.push_back(example({{"price", Feature::floats({30})}, {"make", Feature::bytes({"saab"})},
                          {"style", Feature::bytes({"sedan"})}, {"fuel", Feature::bytes({"gas"})},
                          {"weight", Feature::int64s({9})}}));
  eval.push_back(example({{"fuel", Feature::bytes({"diesel"})}}));
  testing::write_examples(f.dir / "eval.tfrecord", eval);
  // Batch 3 leaves a padded last batch.
  EXPECT_EQ(apply_transform(a, {f.dir / "eval.tfrecord"}, f.dir / "out/eval.tfrecord",
                            {.batch_size = 3}),
            8);
  auto rows = read_transformed(f.dir / "out/eval.tfrecord");
  ASSERT_EQ(rows.size(), 8u);
  // price: z = (x - 30) * (1 / sqrt(200)) in f32; missing -> the mean -> 0.
  const float inv_std = static_cast<float>(1.0 / std::sqrt(200.0));
  const float prices[] = {10, 20, 30, 30, 40, 50, 30, 30};
  // make: vocabulary audi, bmw, "", volvo (+ 1 OOV bucket): one-hot of 5.
  const int makes[] = {0, 1, 0, 3, 1, 2, 4, 2};
  // weight: boundaries [3] (n = 5, rank floor(5/2) = 2); missing -> the mean 3 -> bucket 1.
  const int buckets[] = {0, 0, 1, 1, 1, 1, 1, 1};
  const char* styles[] = {"sedan", "wagon", "sedan", "", "sedan", "hatch", "sedan", ""};
  const char* make_names[] = {"audi", "bmw", "audi", "volvo", "bmw", "", "saab", ""};
  const int64_t labels[] = {1, 0, 1, 1, 1, 0, 1, 0};
  for (size_t i = 0; i < rows.size(); ++i) {
    const std::vector<float>& x = rows[i].first;
    ASSERT_EQ(x.size(), 8u);
    EXPECT_FLOAT_EQ(x[0], (prices[i] - 30.0f) * inv_std) << i;
    for (int k = 0; k < 5; ++k) EXPECT_EQ(x[1 + k], k == makes[i] ? 1.0f : 0.0f) << i << " " << k;
    EXPECT_EQ(x[6], static_cast<float>(buckets[i])) << i;
    EXPECT_EQ(x[7], static_cast<float>(cross_bucket(make_names[i], styles[i], 3))) << i;
    EXPECT_EQ(rows[i].second, labels[i]) << i;
  }
}

TEST(TransformGraph, ArtifactChecksItsFiles) {
  Fixture f;
  const std::string dir = f.dir / "artifact";
  write_transform_artifact(f.spec, f.analysis, dir);
  TransformArtifact a = read_transform_artifact(dir);
  EXPECT_EQ(a.analysis, f.analysis);
  ASSERT_EQ(a.spec.features.size(), f.spec.features.size());
  for (size_t k = 0; k < a.spec.features.size(); ++k)
    EXPECT_EQ(a.spec.features[k].name, f.spec.features[k].name);
  // A graph file that does not match the analysis is refused, naming it.
  std::string graph = io::read_file(dir + "/transform.tern");
  size_t at = graph.find("num_buckets=3");
  ASSERT_NE(at, std::string::npos) << graph;
  graph.replace(at, 13, "num_buckets=4");
  std::ofstream(dir + "/transform.tern") << graph;
  try {
    read_transform_artifact(dir);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kDataLoss);
    EXPECT_NE(std::string(e.what()).find(dir + "/transform.tern: does not match"),
              std::string::npos)
        << e.what();
  }
  std::filesystem::remove(dir + "/analysis.json");
  try {
    read_transform_artifact(dir);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kNotFound);
    EXPECT_NE(std::string(e.what()).find("analysis.json: missing"), std::string::npos);
  }
}

TEST(TransformGraph, ApplyNamesBadRecords) {
  Fixture f;
  TransformArtifact a = make_transform_artifact(f.spec, f.analysis);
  auto apply_error = [&](const std::vector<data::Example>& eval) {
    testing::write_examples(f.dir / "bad.tfrecord", eval);
    try {
      apply_transform(a, {f.dir / "bad.tfrecord"}, f.dir / "bad_out.tfrecord");
    } catch (const Error& e) {
      EXPECT_FALSE(std::filesystem::exists(f.dir / "bad_out.tfrecord"));
      return std::string(e.what());
    }
    return std::string("no error");
  };
  std::vector<data::Example> eval = cars();
  eval[4].features["fuel"] = Feature::bytes({"electric"});
  EXPECT_NE(apply_error(eval).find("bad.tfrecord: record 4: label 'fuel' is 'electric', a class "
                                   "the training split does not have"),
            std::string::npos);
  eval = cars();
  eval[2].features["price"] = Feature::floats({1, 2});
  EXPECT_NE(apply_error(eval).find("bad.tfrecord: record 2: feature 'price' has 2 values"),
            std::string::npos);
  eval = cars();
  eval[1].features.erase("fuel");
  EXPECT_NE(apply_error(eval).find("record 1: feature 'fuel' (the label) is missing"),
            std::string::npos);
}

}  // namespace
}  // namespace tern::transform
