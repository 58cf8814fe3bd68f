// compute_statistics on small hand-made splits (exact values), its sketches past the exact
// limits, determinism across threads and blocks, bad input, and the JSON round trip and checks.
#include "tern/pipeline/statistics.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

#include "tern/base/error.h"
#include "tern/data/image_codec.h"
#include "tern/format/proto_wire.h"
#include "tern/pipeline/sketches.h"
#include "tern/pipeline/test_util.h"

namespace tern::pipeline {
namespace {

using data::Example;
using data::Feature;
using testing::example;
using testing::TempDir;
using testing::write_examples;

StatisticsOptions quiet() {
  StatisticsOptions o;
  o.progress = false;
  return o;
}

double quantile(const NumericStatistics& n, double q) {
  for (const auto& [p, v] : n.quantiles)
    if (p == q) return v;
  ADD_FAILURE() << "no quantile " << q;
  return NAN;
}

TEST(Statistics, NumericExactValues) {
  TempDir dir;
  std::vector<Example> ex;
  const std::vector<float> xs = {1, 2, 3, 4, 10};
  for (float x : xs) ex.push_back(example({{"x", Feature::floats({x})}}));
  ex.push_back(example({{"k", Feature::int64s({0, 0})}}));  // no x: missing
  ex.push_back(example({{"k", Feature::int64s({5})}}));
  ex.push_back(example({{"k", Feature::int64s({})}}));  // present, no values
  write_examples(dir.file("a.tfrecord"), ex);

  const DatasetStatistics s = compute_statistics({dir.file("a.tfrecord")}, quiet());
  EXPECT_EQ(s.examples, 8);
  const FeatureStatistics* x = s.find("x");
  ASSERT_NE(x, nullptr);
  EXPECT_EQ(x->type, FeatureType::kFloat);
  EXPECT_EQ(x->count, 5);
  EXPECT_EQ(x->missing, 3);
  ASSERT_TRUE(x->numeric);
  const NumericStatistics& n = *x->numeric;
  EXPECT_DOUBLE_EQ(n.mean, 4);
  EXPECT_NEAR(n.std_dev, std::sqrt(10.0), 1e-12);  // population: (9 + 4 + 1 + 0 + 36) / 5
  EXPECT_EQ(n.min, 1);
  EXPECT_EQ(n.max, 10);
  EXPECT_EQ(n.zeros, 0);
  EXPECT_TRUE(n.quantiles_exact);
  EXPECT_DOUBLE_EQ(quantile(n, 0), 1);
  EXPECT_DOUBLE_EQ(quantile(n, 0.1), 1.4);  // linear between closest ranks
  EXPECT_DOUBLE_EQ(quantile(n, 0.25), 2);
  EXPECT_DOUBLE_EQ(quantile(n, 0.5), 3);
  EXPECT_DOUBLE_EQ(quantile(n, 0.9), 7.6);
  EXPECT_DOUBLE_EQ(quantile(n, 1), 10);
  ASSERT_EQ(n.histogram.size(), 20u);
  EXPECT_DOUBLE_EQ(n.histogram[0].low, 1);
  EXPECT_DOUBLE_EQ(n.histogram[19].high, 10);
  std::vector<double> counts;
  for (const HistogramBin& b : n.histogram) counts.push_back(b.count);
  std::vector<double> want(20, 0);
  want[0] = want[2] = want[4] = want[6] = want[19] = 1;  // width 0.45
  EXPECT_EQ(counts, want);

  const FeatureStatistics* k = s.find("k");
  ASSERT_NE(k, nullptr);
  EXPECT_EQ(k->type, FeatureType::kInt);
  EXPECT_EQ(k->count, 3);
  EXPECT_EQ(k->num_values, 3);
  EXPECT_EQ(k->min_values, 0);
  EXPECT_EQ(k->max_values, 2);
  EXPECT_DOUBLE_EQ(k->avg_values, 1);
  EXPECT_EQ(k->numeric->zeros, 2);
  using Counts = std::vector<std::pair<double, int64_t>>;
  EXPECT_EQ(k->numeric->value_counts, (Counts{{0, 2}, {5, 1}}));
  StatisticsOptions few = quiet();
  few.max_distinct_numbers = 4;  // x has 5 distinct values
  const DatasetStatistics s4 = compute_statistics({dir.file("a.tfrecord")}, few);
  EXPECT_TRUE(s4.find("x")->numeric->value_counts.empty());
  EXPECT_EQ(s4.find("k")->numeric->value_counts.size(), 2u);
  EXPECT_EQ(k->numeric->max, 5);
  EXPECT_EQ(s.find("nothing"), nullptr);
}

TEST(Statistics, NanAndInfinityAreCountedApart) {
  TempDir dir;
  write_examples(dir.file("a.tfrecord"),
                 {example({{"x", Feature::floats({NAN, INFINITY, 2, -INFINITY, 4})}})});
  const DatasetStatistics s = compute_statistics({dir.file("a.tfrecord")}, quiet());
  const NumericStatistics& n = *s.find("x")->numeric;
  EXPECT_EQ(n.nan, 1);
  EXPECT_EQ(n.infinite, 2);
  EXPECT_EQ(n.finite, 2);
  EXPECT_DOUBLE_EQ(n.mean, 3);
}

TEST(Statistics, BytesTopKUniqueAndLengths) {
  TempDir dir;
  std::vector<Example> ex;
  for (const char* v : {"a", "b", "a", "c", "a", "b"})
    ex.push_back(example({{"c", Feature::bytes({v})}}));
  ex.push_back(example({{"c", Feature::bytes({"dddd", "a"})}}));
  write_examples(dir.file("a.tfrecord"), ex);
  StatisticsOptions o = quiet();
  o.top_k = 2;
  const DatasetStatistics s = compute_statistics({dir.file("a.tfrecord")}, o);
  const FeatureStatistics* c = s.find("c");
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->type, FeatureType::kBytes);
  ASSERT_TRUE(c->bytes);
  const BytesStatistics& b = *c->bytes;
  EXPECT_EQ(b.unique, 4);
  EXPECT_TRUE(b.unique_exact);
  using Top = std::vector<std::pair<std::string, int64_t>>;
  EXPECT_EQ(b.top_values, (Top{{"a", 4}, {"b", 2}}));
  EXPECT_EQ(b.value_counts,
            (std::map<std::string, int64_t>{{"a", 4}, {"b", 2}, {"c", 1}, {"dddd", 1}}));
  EXPECT_DOUBLE_EQ(b.avg_length, 11.0 / 8);
  EXPECT_EQ(b.min_length, 1);
  EXPECT_EQ(b.max_length, 4);
  EXPECT_EQ(c->max_values, 2);
  EXPECT_FALSE(c->numeric);
}

Example raw_image(const std::string& pixels, int64_t h, int64_t w, int64_t c) {
  return example({{"image/encoded", Feature::bytes({pixels})},
                  {"image/format", Feature::bytes({"raw"})},
                  {"image/height", Feature::int64s({h})},
                  {"image/width", Feature::int64s({w})},
                  {"image/channels", Feature::int64s({c})},
                  {"image/class/label", Feature::int64s({1})}});
}

std::string rgb_pixels(int n, uint8_t r, uint8_t g, uint8_t b) {
  std::string s;
  for (int i = 0; i < n; ++i)
    s += {static_cast<char>(r), static_cast<char>(g), static_cast<char>(b)};
  return s;
}

TEST(Statistics, RawImagesShapeAndChannelMeans) {
  TempDir dir;
  write_examples(
      dir.file("a.tfrecord"),
      {raw_image(rgb_pixels(4, 10, 20, 30), 2, 2, 3), raw_image(rgb_pixels(4, 30, 40, 50), 2, 2, 3),
       raw_image(rgb_pixels(3, 0, 0, 0), 2, 2, 3)});  // 9 bytes for 2x2x3: invalid
  const DatasetStatistics s = compute_statistics({dir.file("a.tfrecord")}, quiet());
  const FeatureStatistics* f = s.find("image/encoded");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->type, FeatureType::kImage);
  ASSERT_TRUE(f->image);
  const ImageStatistics& im = *f->image;
  EXPECT_EQ(im.formats, (std::map<std::string, int64_t>{{"raw", 3}}));
  ASSERT_EQ(im.shapes.size(), 1u);
  EXPECT_EQ(im.shapes[0], (ImageShapeCount{2, 2, 3, 2}));
  EXPECT_EQ(im.invalid, 1);
  EXPECT_EQ(im.channel_means, (std::vector<double>{20, 30, 40}));
  EXPECT_EQ(im.images_measured, 2);
  EXPECT_FALSE(im.sampled);
  EXPECT_FALSE(f->bytes);  // images are not counted as categories
  // The companions are ordinary features.
  EXPECT_EQ(s.find("image/height")->type, FeatureType::kInt);
  EXPECT_EQ(s.find("image/format")->bytes->top_values[0].first, "raw");
}

TEST(Statistics, GrayRawImagesLongerThanOneVector) {
  TempDir dir;
  std::string pixels(28 * 28, '\0');
  for (size_t i = 0; i < pixels.size(); ++i) pixels[i] = static_cast<char>(i % 251);
  double sum = 0;
  for (char c : pixels) sum += static_cast<unsigned char>(c);
  write_examples(dir.file("a.tfrecord"), {raw_image(pixels, 28, 28, 1)});
  const DatasetStatistics s = compute_statistics({dir.file("a.tfrecord")}, quiet());
  EXPECT_EQ(s.find("image/encoded")->image->channel_means, (std::vector<double>{sum / 784}));
}

TEST(Statistics, PngImagesAreDecodedForChannelMeans) {
  TempDir dir;
  std::vector<Example> ex;
  for (int v : {100, 200}) {
    Tensor img = Tensor::full(DType::kU8, Shape{4, 5, 1}, v);
    ex.push_back(example({{"image/encoded", Feature::bytes({data::encode_png(img)})},
                          {"image/format", Feature::bytes({"png"})}}));
  }
  ex.push_back(example({{"image/encoded", Feature::bytes({"not a png"})},
                        {"image/format", Feature::bytes({"png"})}}));
  write_examples(dir.file("a.tfrecord"), ex);
  const DatasetStatistics s = compute_statistics({dir.file("a.tfrecord")}, quiet());
  const ImageStatistics& im = *s.find("image/encoded")->image;
  EXPECT_EQ(im.channel_means, (std::vector<double>{150}));
  ASSERT_EQ(im.shapes.size(), 1u);
  EXPECT_EQ(im.shapes[0], (ImageShapeCount{4, 5, 1, 2}));
  EXPECT_EQ(im.invalid, 1);
  EXPECT_EQ(im.formats.at("png"), 3);

  StatisticsOptions none = quiet();
  none.max_decoded_images = 0;  // shapes from the headers, no pixels
  const ImageStatistics sampled =
      *compute_statistics({dir.file("a.tfrecord")}, none).find("image/encoded")->image;
  EXPECT_TRUE(sampled.sampled);
  EXPECT_TRUE(sampled.channel_means.empty());
  EXPECT_EQ(sampled.shapes[0].count, 2);
}

// Records in forms other than what serialize_example writes take the general walk and give the
// statistics of what they mean.
TEST(Statistics, NonCanonicalRecordsGiveTheSameStatistics) {
  using format::ProtoWriter;
  auto entry = [](const std::string& key, const std::string& feature, bool value_first) {
    ProtoWriter e;
    if (value_first) e.add_bytes(2, feature);
    e.add_bytes(1, key);
    if (!value_first) e.add_bytes(2, feature);
    return e.bytes();
  };
  auto list = [](int kind, const std::string& values) {
    ProtoWriter f;
    f.add_bytes(static_cast<uint32_t>(kind), values);
    return f.bytes();
  };
  std::vector<std::string> odd;
  for (int i = 0; i < 3; ++i) {
    ProtoWriter ints;  // unpacked int64 values: field 1 as varints
    ints.add_varint(1, static_cast<uint64_t>(i));
    ints.add_varint(1, 7);
    ProtoWriter floats;  // unpacked floats: field 1 as fixed32
    floats.add_float(1, 0.5f * static_cast<float>(i));
    ProtoWriter bytes;
    bytes.add_bytes(1, i % 2 ? "odd" : "even");
    ProtoWriter features;
    features.add_bytes(1, entry("n", list(3, ints.bytes()), true));
    features.add_bytes(1, entry("f", list(2, floats.bytes()), false));
    features.add_bytes(1, entry("s", list(1, "junk-first"), false));  // replaced below
    features.add_bytes(1, entry("s", list(1, bytes.bytes()), false));
    ProtoWriter example;
    example.add_varint(7, 42);  // an unknown field
    example.add_bytes(1, features.bytes());
    odd.push_back(example.bytes());
  }
  std::vector<Example> same;
  for (int i = 0; i < 3; ++i)
    same.push_back(example({{"n", Feature::int64s({i, 7})},
                            {"f", Feature::floats({0.5f * static_cast<float>(i)})},
                            {"s", Feature::bytes({i % 2 ? "odd" : "even"})}}));
  TempDir dir;
  {
    data::TFRecordWriter w(dir.file("odd.tfrecord"));
    for (const std::string& r : odd) w.write(r);
    w.close();
  }
  write_examples(dir.file("same.tfrecord"), same);
  DatasetStatistics a = compute_statistics({dir.file("odd.tfrecord")}, quiet());
  DatasetStatistics b = compute_statistics({dir.file("same.tfrecord")}, quiet());
  a.files = b.files = {};
  a.bytes = b.bytes = 0;
  EXPECT_EQ(statistics_to_json(a), statistics_to_json(b));
  EXPECT_EQ(a.find("s")->bytes->value_counts.count("junk-first"), 0u);
}

TEST(Statistics, MixedKindsAreReported) {
  TempDir dir;
  write_examples(dir.file("a.tfrecord"),
                 {example({{"v", Feature::int64s({1})}}), example({{"v", Feature::int64s({2})}}),
                  example({{"v", Feature::floats({2.5})}})});
  const DatasetStatistics s = compute_statistics({dir.file("a.tfrecord")}, quiet());
  const FeatureStatistics* v = s.find("v");
  EXPECT_EQ(v->type, FeatureType::kInt);
  EXPECT_EQ(v->other_types, (std::map<std::string, int64_t>{{"float", 1}}));
  EXPECT_DOUBLE_EQ(v->numeric->mean, 5.5 / 3);
}

// Many records in small blocks over several files: the same result with 1 and 3 threads, and
// the same as one block.
TEST(Statistics, SameResultForAnyThreadCountAndBlockSize) {
  TempDir dir;
  std::vector<std::string> files;
  for (int f = 0; f < 3; ++f) {
    std::vector<Example> ex;
    for (int i = 0; i < 700; ++i) {
      const int k = f * 700 + i;
      ex.push_back(example(
          {{"x", Feature::floats({static_cast<float>(std::sin(k) * 100)})},
           {"n", Feature::int64s({k % 17, k % 5})},
           {"c", Feature::bytes({std::string(1 + k % 3, static_cast<char>('a' + k % 7))})}}));
    }
    files.push_back(dir.file("f" + std::to_string(f) + ".tfrecord"));
    write_examples(files.back(), ex);
  }
  StatisticsOptions one = quiet();
  one.threads = 1;
  one.block_bytes = 4096;
  StatisticsOptions three = one;
  three.threads = 3;
  StatisticsOptions big = quiet();
  const DatasetStatistics a = compute_statistics(files, one);
  const DatasetStatistics b = compute_statistics(files, three);
  EXPECT_EQ(statistics_to_json(a), statistics_to_json(b));
  EXPECT_EQ(a.examples, 2100);
  const DatasetStatistics c = compute_statistics(files, big);
  EXPECT_EQ(c.find("c")->bytes->value_counts, a.find("c")->bytes->value_counts);
  EXPECT_NEAR(c.find("x")->numeric->mean, a.find("x")->numeric->mean, 1e-9);
  EXPECT_NEAR(c.find("x")->numeric->std_dev, a.find("x")->numeric->std_dev, 1e-9);
  EXPECT_EQ(c.find("x")->numeric->quantiles, a.find("x")->numeric->quantiles);
}

TEST(Statistics, SketchQuantilesWithinTheRelativeAccuracy) {
  TempDir dir;
  std::vector<Example> ex;
  std::vector<double> values;
  for (int i = 1; i <= 5000; ++i) {
    const double v = std::exp(std::sin(i * 0.37) * 5);  // spread over 1e-2 .. 1e2
    values.push_back(static_cast<float>(v));
    ex.push_back(example({{"x", Feature::floats({static_cast<float>(v)})}}));
  }
  write_examples(dir.file("a.tfrecord"), ex);
  StatisticsOptions o = quiet();
  o.max_exact_values = 100;
  o.block_bytes = 4096;
  const NumericStatistics n = *compute_statistics({dir.file("a.tfrecord")}, o).find("x")->numeric;
  EXPECT_FALSE(n.quantiles_exact);
  std::sort(values.begin(), values.end());
  for (const auto& [q, v] : n.quantiles) {
    const double exact = values[static_cast<size_t>(q * (values.size() - 1))];
    EXPECT_LE(std::fabs(v - exact), o.sketch_relative_accuracy * exact * 1.0001) << "q " << q;
  }
  double total = 0;
  for (const HistogramBin& b : n.histogram) total += b.count;
  EXPECT_EQ(total, 5000);
}

TEST(Statistics, DistinctEstimatePastTheValueCountCap) {
  TempDir dir;
  std::vector<Example> ex;
  for (int i = 0; i < 20000; ++i)
    ex.push_back(example({{"id", Feature::bytes({"id" + std::to_string(i % 10000)})}}));
  write_examples(dir.file("a.tfrecord"), ex);
  StatisticsOptions o = quiet();
  o.max_value_counts = 500;
  o.block_bytes = 4096;
  const BytesStatistics b = *compute_statistics({dir.file("a.tfrecord")}, o).find("id")->bytes;
  EXPECT_FALSE(b.unique_exact);
  EXPECT_FALSE(b.value_counts_complete);
  EXPECT_EQ(b.value_counts.size(), 500u);
  EXPECT_NEAR(static_cast<double>(b.unique), 10000, 10000 * 0.05);
  int64_t counted = b.other_values;
  for (const auto& [v, n] : b.value_counts) counted += n;
  EXPECT_EQ(counted, 20000);
}

TEST(Statistics, CorruptInputNamesTheFileAndOffset) {
  TempDir dir;
  write_examples(dir.file("a.tfrecord"),
                 {example({{"x", Feature::floats({1})}}), example({{"x", Feature::floats({2})}})});
  std::string bytes = data::read_file_bytes(dir.file("a.tfrecord"));
  const std::string good = bytes;
  bytes[bytes.size() - 6] ^= 0x40;  // the second record's data
  data::write_file_bytes(dir.file("a.tfrecord"), bytes);
  try {
    compute_statistics({dir.file("a.tfrecord")}, quiet());
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kDataLoss);
    EXPECT_NE(e.message().find(dir.file("a.tfrecord")), std::string::npos) << e.what();
    EXPECT_NE(e.message().find("record 1"), std::string::npos) << e.what();
  }
  // A truncated tail.
  data::write_file_bytes(dir.file("a.tfrecord"), good.substr(0, good.size() - 3));
  EXPECT_THROW(compute_statistics({dir.file("a.tfrecord")}, quiet()), Error);
  // A record that is not an Example.
  {
    data::TFRecordWriter w(dir.file("b.tfrecord"));
    w.write(data::serialize_example(example({{"x", Feature::floats({1})}})));
    w.write("\x0a\x05\x0a\x03\xff\xff");  // features -> entry with a broken length
    w.close();
  }
  try {
    compute_statistics({dir.file("b.tfrecord")}, quiet());
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(e.message().find("record 1"), std::string::npos) << e.what();
    EXPECT_NE(e.message().find("b.tfrecord"), std::string::npos) << e.what();
  }
  EXPECT_THROW(compute_statistics({dir.file("missing.tfrecord")}, quiet()), Error);
}

TEST(Statistics, GzipFilesAndTheirCorruption) {
  TempDir dir;
  {
    data::TFRecordWriter w(dir.file("a.tfrecord.gz"), data::Compression::kGzip);
    for (int i = 0; i < 200; ++i)
      w.write(data::serialize_example(example({{"x", Feature::int64s({i})}})));
    w.close();
  }
  const DatasetStatistics s = compute_statistics({dir.file("a.tfrecord.gz")}, quiet());
  EXPECT_EQ(s.examples, 200);
  EXPECT_DOUBLE_EQ(s.find("x")->numeric->mean, 99.5);
  // Cut short: the gzip stream ends early, which is a DataLoss, not a shorter split.
  const std::string bytes = data::read_file_bytes(dir.file("a.tfrecord.gz"));
  data::write_file_bytes(dir.file("cut.tfrecord.gz"), bytes.substr(0, bytes.size() - 20));
  try {
    compute_statistics({dir.file("cut.tfrecord.gz")}, quiet());
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kDataLoss) << e.what();
    EXPECT_NE(e.message().find("cut.tfrecord.gz"), std::string::npos) << e.what();
  }
}

TEST(Statistics, JsonRoundTrip) {
  TempDir dir;
  write_examples(
      dir.file("a.tfrecord"),
      {raw_image(rgb_pixels(4, 10, 20, 30), 2, 2, 3),
       example({{"x", Feature::floats({1.25f, -3})}, {"s", Feature::bytes({"\xff\xfe", "ok"})}}),
       example({{"x", Feature::int64s({7})}})});
  const DatasetStatistics s = compute_statistics({dir.file("a.tfrecord")}, quiet());
  const std::string text = statistics_to_json(s);
  const DatasetStatistics back = parse_statistics_json(text, "s.json");
  EXPECT_EQ(back, s);
  EXPECT_EQ(statistics_to_json(back), text);
  // Invalid UTF-8 values are shown as \x escapes.
  EXPECT_EQ(s.find("s")->bytes->value_counts.count("\\xFF\\xFE"), 1u);
}

void expect_bad_json(const std::string& text, const std::string& want) {
  try {
    parse_statistics_json(text, "stats.json");
    ADD_FAILURE() << "accepted: " << text;
  } catch (const Error& e) {
    EXPECT_NE(e.message().find(want), std::string::npos) << e.what();
    EXPECT_NE(e.message().find("stats.json"), std::string::npos) << e.what();
  }
}

TEST(Statistics, MalformedJsonNamesTheKey) {
  TempDir dir;
  write_examples(dir.file("a.tfrecord"), {example({{"x", Feature::floats({1})}})});
  const std::string good =
      statistics_to_json(compute_statistics({dir.file("a.tfrecord")}, quiet()));
  auto replace = [&](const std::string& from, const std::string& to) {
    std::string s = good;
    const size_t at = s.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    return s.replace(at, from.size(), to);
  };
  expect_bad_json("{", "not valid JSON");
  expect_bad_json("[]", "expected an object");
  expect_bad_json(replace("\"mean\"", "\"meen\""), "features[0].numeric.meen: unknown key");
  expect_bad_json(replace("\"examples\": 1", "\"examples\": \"1\""),
                  "examples: expected an integer");
  expect_bad_json(replace("\"zeros\": 0", "\"zeros\": -1"),
                  "features[0].numeric.zeros: must be >= 0");
  expect_bad_json(replace("\"type\": \"float\"", "\"type\": \"complex\""), "features[0].type");
  expect_bad_json(replace("\"missing\": 0", "\"missing\": 3"), "features[0].missing");
  expect_bad_json(replace("\"tern.statistics\"", "\"other\""), "format");
  expect_bad_json(replace("\"histogram\"", "\"histogrm\""), "features[0].numeric");
}

TEST(Sketches, QuantileSketchMergeEqualsOneSketch) {
  QuantileSketch a(0.01), b(0.01), all(0.01);
  for (int i = -500; i < 500; ++i) {
    (i % 2 ? a : b).add(i * 0.5);
    all.add(i * 0.5);
  }
  a.merge(b);
  EXPECT_EQ(a.buckets(), all.buckets());
  EXPECT_EQ(a.count(), 1000);
  EXPECT_NEAR(a.quantile(0.5), 0, 0.5 * 1.02);  // rank 499.5: -0.5 or 0
  EXPECT_NEAR(a.quantile(1), 249.5, 249.5 * 0.01);
  EXPECT_NEAR(a.quantile(0), -250, 250 * 0.01);
}

}  // namespace
}  // namespace tern::pipeline
