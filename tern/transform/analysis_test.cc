// The analyzers on small data computed by hand (means, stds, min/max, vocabulary order with ties,
// frequency threshold, top_k, quantile boundaries, label vocabularies), the same result on any
// chunking and thread count, analysis.json round trips and its validation, the quantile sketch's
// error bound, raw u8 pixels, and bad records named by file and record index.
#include "tern/transform/analysis.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

#include "tern/base/philox.h"
#include "tern/transform/quantiles.h"
#include "tern/transform/raw_batch.h"
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
name = "price01"
input = "price"
op = "scale_to_0_1"
[[transform.features]]
input = "make"
op = "vocabulary"
[[transform.features]]
name = "make2"
input = "make"
op = "vocabulary"
frequency_threshold = 2
[[transform.features]]
name = "make_top1"
input = "make"
op = "vocabulary"
top_k = 1
[[transform.features]]
input = "weight"
op = "bucketize"
num_buckets = 4
[[transform.features]]
input = "style"
op = "hash"
hash_buckets = 5
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

using Counts = std::vector<std::pair<std::string, int64_t>>;

TEST(TransformAnalyze, ComputesEveryAnalyzerByHand) {
  testing::TempDir dir;
  testing::write_examples(dir / "cars.tfrecord", cars());
  TransformSpec spec = parse_transform_spec(kSpec, "t.toml");
  TransformAnalysis a = analyze(spec, {dir / "cars.tfrecord"});
  EXPECT_EQ(a.records, 6);
  EXPECT_EQ(a.bytes, static_cast<int64_t>(std::filesystem::file_size(dir / "cars.tfrecord")));
  ASSERT_EQ(a.features.size(), 7u);
  const FeatureAnalysis& z = a.features[0];
  EXPECT_EQ(z.present, 5);
  EXPECT_EQ(z.missing, 1);
  EXPECT_EQ(z.count, 5);
  EXPECT_NEAR(z.mean, 30, 1e-12);
  EXPECT_NEAR(z.std, std::sqrt(200.0), 1e-12);  // population std of 10, 20, 30, 40, 50
  EXPECT_EQ(a.features[1].min, 10);
  EXPECT_EQ(a.features[1].max, 50);
  // Most frequent first, ties by value: audi 2, bmw 2, "" 1, volvo 1.
  EXPECT_EQ(a.features[2].vocabulary, (Counts{{"audi", 2}, {"bmw", 2}, {"", 1}, {"volvo", 1}}));
  EXPECT_EQ(a.features[2].unique, 4);
  EXPECT_EQ(a.features[3].vocabulary, (Counts{{"audi", 2}, {"bmw", 2}}));
  EXPECT_EQ(a.features[4].vocabulary, (Counts{{"audi", 2}}));
  // weight 1..5 (n = 5): ranks floor(5/4) = 1, floor(10/4) = 2, floor(15/4) = 3.
  EXPECT_EQ(a.features[5].boundaries, (std::vector<double>{2, 3, 4}));
  EXPECT_EQ(a.features[5].quantile_rank_error, 0);
  EXPECT_EQ(a.features[5].missing, 1);
  EXPECT_EQ(a.features[6].present, 5);  // style: one record lacks it
  // The label's classes in value order.
  EXPECT_TRUE(a.label.bytes);
  EXPECT_EQ(a.label.vocabulary, (Counts{{"diesel", 2}, {"gas", 4}}));
  EXPECT_EQ(a.label.class_names(), (std::vector<std::string>{"diesel", "gas"}));
}

TEST(TransformAnalyze, SameResultOnAnyChunkingAndThreadCount) {
  testing::TempDir dir;
  std::vector<data::Example> many;
  PhiloxStream rng(7, 0);
  const char* makes[] = {"audi", "bmw", "volvo", "saab", "fiat"};
  for (int i = 0; i < 3000; ++i) {
    data::Example e = example({{"price", Feature::floats({static_cast<float>(
                                             rng.next_double() * 1000)})},
                               {"make", Feature::bytes({makes[rng.next_u32() % 5]})},
                               {"weight", Feature::int64s({static_cast<int64_t>(i % 97)})},
                               {"style", Feature::bytes({"s"})},
                               {"fuel", Feature::bytes({i % 3 ? "gas" : "diesel"})}});
    if (i % 11 == 0) e.features.erase("price");
    many.push_back(e);
  }
  testing::write_examples(dir / "a.tfrecord", std::vector<data::Example>(many.begin(), many.begin() + 1700));
  testing::write_examples(dir / "b.tfrecord", std::vector<data::Example>(many.begin() + 1700, many.end()));
  TransformSpec spec = parse_transform_spec(kSpec, "t.toml");
  const std::vector<std::string> files = {dir / "a.tfrecord", dir / "b.tfrecord"};
  TransformAnalysis one = analyze(spec, files, {.threads = 1, .chunk_records = 64});
  TransformAnalysis two = analyze(spec, files, {.threads = 2, .chunk_records = 64});
  EXPECT_EQ(one, two);  // bit for bit: partials merge in record order
  TransformAnalysis big = analyze(spec, files, {.threads = 2, .chunk_records = 4096});
  // Other chunkings merge the moments in another order: equal to rounding.
  for (size_t k = 0; k < big.features.size(); ++k) {
    EXPECT_NEAR(big.features[k].mean, one.features[k].mean, 1e-9) << k;
    EXPECT_NEAR(big.features[k].std, one.features[k].std, 1e-9) << k;
    big.features[k].mean = one.features[k].mean;
    big.features[k].std = one.features[k].std;
  }
  EXPECT_EQ(big, one);
  EXPECT_EQ(one.records, 3000);
  EXPECT_EQ(one.features[0].missing, 273);  // i % 11 == 0
}

TEST(TransformAnalyze, JsonRoundTripAndValidation) {
  testing::TempDir dir;
  testing::write_examples(dir / "cars.tfrecord", cars());
  TransformSpec spec = parse_transform_spec(kSpec, "t.toml");
  TransformAnalysis a = analyze(spec, {dir / "cars.tfrecord"});
  const std::string text = analysis_to_json(a);
  EXPECT_EQ(parse_analysis_json(text, spec, "analysis.json"), a);
  auto error = [&](const std::string& from, const std::string& to) {
    std::string bad = text;
    size_t at = bad.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    bad.replace(at, from.size(), to);
    try {
      parse_analysis_json(bad, spec, "analysis.json");
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(error("\"name\": \"price01\"", "\"name\": \"p\"")
                .find("analysis.json: key 'features[1].name' is 'p'"),
            std::string::npos);
  EXPECT_NE(error("\"boundaries\": [\n        2.0,", "\"boundaries\": [\n        3.5,")
                .find("key 'features[5].boundaries[1]' must be greater than the one before"),
            std::string::npos);
  EXPECT_NE(error("\"value\": \"bmw\"", "\"value\": \"audi\"")
                .find("key 'features[2].vocabulary[1]' repeats value 'audi'"),
            std::string::npos);
  EXPECT_NE(error("\"std\":", "\"sd\":").find("key 'features[0].std' is missing"),
            std::string::npos);
  EXPECT_NE(error("\"kind\": \"bytes\"", "\"kind\": \"text\"").find("key 'label.kind'"),
            std::string::npos);
  EXPECT_NE(error("{", "[").find("analysis.json: not valid JSON"), std::string::npos);
  EXPECT_NE(error("\"format_version\": 1", "\"format_version\": 2").find("format_version"),
            std::string::npos);
  // Another spec's analysis.
  TransformSpec other = parse_transform_spec(
      "[transform]\n[[transform.features]]\ninput = \"price\"\nop = \"identity\"\n", "o.toml");
  EXPECT_THROW(parse_analysis_json(text, other, "analysis.json"), Error);
}

TEST(TransformAnalyze, ImagePixelsExactlyAndFastPathEqualsGeneral) {
  testing::TempDir dir;
  std::vector<data::Example> images;
  std::vector<double> all;
  PhiloxStream rng(3, 0);
  for (int i = 0; i < 50; ++i) {
    std::string px(12, '\0');  // 2 x 2 x 3
    for (char& c : px) {
      c = static_cast<char>(rng.next_u32() % 256);
      all.push_back(static_cast<uint8_t>(c));
    }
    images.push_back(example({{"image/encoded", Feature::bytes({px})},
                              {"image/class/label", Feature::int64s({i % 4})}}));
  }
  testing::write_examples(dir / "img.tfrecord", images);
  TransformSpec spec = parse_transform_spec(
      "[transform]\nlabel = \"image/class/label\"\n[[transform.features]]\n"
      "input = \"image/encoded\"\nop = \"z_score\"\nshape = [2, 2, 3]\n",
      "t.toml");
  TransformAnalysis a = analyze(spec, {dir / "img.tfrecord"}, {.chunk_records = 7});
  double mean = 0, m2 = 0;
  for (double v : all) mean += v;
  mean /= static_cast<double>(all.size());
  for (double v : all) m2 += (v - mean) * (v - mean);
  EXPECT_EQ(a.features[0].count, 600);
  EXPECT_NEAR(a.features[0].mean, mean, 1e-9);
  EXPECT_NEAR(a.features[0].std, std::sqrt(m2 / 600), 1e-9);
  EXPECT_EQ(a.features[0].min, *std::min_element(all.begin(), all.end()));
  EXPECT_EQ(a.label.num_classes, 4);
  EXPECT_EQ(a.label.class_names(), (std::vector<std::string>{"0", "1", "2", "3"}));

  // The decoder's fast path (all features fixed-length) gives what the general parser gives.
  TransformSpec num = parse_transform_spec(
      "[transform]\nlabel = \"l\"\n[[transform.features]]\ninput = \"n\"\nop = \"identity\"\n"
      "length = 2\n",
      "n.toml");
  std::vector<std::string> recs;
  for (int i = 0; i < 4; ++i)
    recs.push_back(data::serialize_example(example(
        {{"n", Feature::int64s({i, -i})}, {"l", Feature::int64s({i})}})));
  std::vector<std::string_view> views(recs.begin(), recs.end());
  RawDecoder decoder(num, false);
  RawBatch general, fast;
  decoder.decode(views, "f", 0, general);  // guesses float_list: declines, learns int64_list
  decoder.decode(views, "f", 0, fast);     // now the fast path
  EXPECT_EQ(general.columns[0].values.to_doubles(), fast.columns[0].values.to_doubles());
  EXPECT_EQ(fast.columns[0].values.to_doubles(), (std::vector<double>{0, 0, 1, -1, 2, -2, 3, -3}));
  EXPECT_EQ(general.label_ints.to_doubles(), fast.label_ints.to_doubles());
}

TEST(TransformAnalyze, QuantileSketchStaysWithinItsBound) {
  QuantileAccumulator exact(int64_t{1} << 30), sketch(1000, 64);
  std::vector<QuantileAccumulator> parts;
  PhiloxStream rng(11, 0);
  const int64_t n = 200000;
  std::vector<double> values;
  for (int64_t i = 0; i < n; ++i) values.push_back(rng.next_double());
  for (int64_t c = 0; c < 8; ++c) {
    QuantileAccumulator p(1000, 64);
    for (int64_t i = c * n / 8; i < (c + 1) * n / 8; ++i) p.add(values[static_cast<size_t>(i)]);
    sketch.merge(p);
  }
  for (double v : values) exact.add(v);
  EXPECT_TRUE(exact.exact());
  EXPECT_FALSE(sketch.exact());
  EXPECT_EQ(sketch.count(), n);
  const double bound = sketch.rank_error_bound();
  EXPECT_GT(bound, 0);
  EXPECT_LT(bound, 0.1);
  std::vector<double> sorted = values;
  std::sort(sorted.begin(), sorted.end());
  const std::vector<double> want = exact.boundaries(10), got = sketch.boundaries(10);
  ASSERT_EQ(want.size(), 9u);
  ASSERT_EQ(got.size(), 9u);
  for (size_t i = 0; i < 9; ++i) {
    EXPECT_EQ(want[i], sorted[static_cast<size_t>((i + 1) * n / 10)]);
    const double rank = static_cast<double>(
        std::lower_bound(sorted.begin(), sorted.end(), got[i]) - sorted.begin());
    EXPECT_LE(std::abs(rank - static_cast<double>((i + 1) * n / 10)), bound * n + 1) << i;
  }
}

// The message of the error analyze throws.
std::string analyze_error(const std::vector<data::Example>& examples, const std::string& spec_text) {
  testing::TempDir dir;
  testing::write_examples(dir / "f.tfrecord", examples);
  try {
    analyze(parse_transform_spec(spec_text, "t.toml"), {dir / "f.tfrecord"});
  } catch (const Error& e) {
    std::string m = e.what();
    size_t at = m.find(dir.path);
    if (at != std::string::npos) m.erase(at, dir.path.size() + 1);
    return m;
  }
  return "no error";
}

TEST(TransformAnalyze, BadRecordsAreNamed) {
  std::vector<data::Example> c = cars();
  c[3].features["price"] = Feature::bytes({"cheap"});
  EXPECT_NE(analyze_error(c, kSpec).find("f.tfrecord: record 3: feature 'price' is a bytes_list"),
            std::string::npos);
  c = cars();
  c[4].features["make"] = Feature::int64s({3});
  EXPECT_NE(analyze_error(c, kSpec).find("f.tfrecord: record 4: feature 'make' is a int64_list"),
            std::string::npos);
  c = cars();
  c[2].features.erase("fuel");
  EXPECT_NE(analyze_error(c, kSpec).find("f.tfrecord: record 2: feature 'fuel' (the label) is "
                                         "missing"),
            std::string::npos);
  c = cars();
  c[5].features["fuel"] = Feature::int64s({1});
  EXPECT_NE(analyze_error(c, kSpec).find("record 5: feature 'fuel' (the label) is a int64_list"),
            std::string::npos);
  c = cars();
  c[1].features["make"] = Feature::bytes({"a", "b"});
  EXPECT_NE(analyze_error(c, kSpec).find("record 1: feature 'make' has 2 values"),
            std::string::npos);
  // A numeric feature never present: no statistics.
  EXPECT_NE(analyze_error(cars(), "[transform]\n[[transform.features]]\ninput = \"nope\"\n"
                                  "op = \"z_score\"\n")
                .find("transform feature 'nope' (z_score of 'nope'): no values in the 6 training"),
            std::string::npos);
  // An image of the wrong size.
  std::vector<data::Example> img = {
      example({{"im", Feature::bytes({std::string(4, 'x')})}}),
      example({{"im", Feature::bytes({std::string(3, 'x')})}})};
  EXPECT_NE(analyze_error(img, "[transform]\n[[transform.features]]\ninput = \"im\"\n"
                               "op = \"scale_to_0_1\"\nshape = [2, 2, 1]\n")
                .find("record 1: feature 'im' must be one bytes value of 4 raw u8 pixels"),
            std::string::npos);
  // A negative int64 label.
  std::vector<data::Example> neg = {example({{"x", Feature::floats({1})}, {"y", Feature::int64s({0})}}),
                                    example({{"x", Feature::floats({1})}, {"y", Feature::int64s({-2})}})};
  EXPECT_NE(analyze_error(neg, "[transform]\nlabel = \"y\"\n[[transform.features]]\ninput = \"x\"\n"
                               "op = \"identity\"\n")
                .find("label 'y' is -2 in record 1"),
            std::string::npos);
}

TEST(TransformAnalyze, CorruptFilesNameTheByteOffset) {
  testing::TempDir dir;
  testing::write_examples(dir / "f.tfrecord", cars());
  std::string bytes;
  {
    std::ifstream in(dir / "f.tfrecord", std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  TransformSpec spec = parse_transform_spec(kSpec, "t.toml");
  std::ofstream(dir / "cut.tfrecord", std::ios::binary) << bytes.substr(0, bytes.size() - 5);
  try {
    analyze(spec, {dir / "cut.tfrecord"});
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kDataLoss);
    EXPECT_NE(std::string(e.what()).find("cut.tfrecord: corrupt TFRecord at byte offset"),
              std::string::npos)
        << e.what();
  }
  std::string flipped = bytes;
  flipped[20] ^= 0x40;  // inside record 0's data: its CRC no longer matches
  std::ofstream(dir / "flip.tfrecord", std::ios::binary) << flipped;
  EXPECT_THROW(analyze(spec, {dir / "flip.tfrecord"}), Error);
  EXPECT_THROW(analyze(spec, {dir / "none.tfrecord"}), Error);
}

}  // namespace
}  // namespace tern::transform
