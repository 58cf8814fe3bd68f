// infer_schema's rules on hand-made statistics, the TOML round trip (odd names and values
// included), and bad schema files named by file:line and key.
#include "tern/pipeline/schema.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "tern/base/error.h"
#include "tern/pipeline/test_util.h"

namespace tern::pipeline {
namespace {

using data::Example;
using data::Feature;
using testing::example;
using testing::TempDir;

DatasetStatistics sample_statistics() {
  TempDir dir;
  std::vector<Example> ex;
  for (int i = 0; i < 200; ++i) {
    data::Features f = {{"age", Feature::int64s({20 + i % 50})},
                        {"city", Feature::bytes({i % 3 == 0   ? "Oslo"
                                                 : i % 3 == 1 ? "Lima"
                                                              : "Pune"})},
                        {"id", Feature::bytes({"user" + std::to_string(i)})},
                        {"score", Feature::floats({0.5f * static_cast<float>(i % 7), 1})},
                        {"image/encoded", Feature::bytes({std::string(12, '\x07')})},
                        {"image/height", Feature::int64s({2})},
                        {"image/width", Feature::int64s({2})},
                        {"image/channels", Feature::int64s({3})},
                        {"image/format", Feature::bytes({"raw"})}};
    if (i % 2 == 0) f["note"] = Feature::bytes({"x"});
    if (i != 7) f["almost"] = Feature::floats({1});  // 199 of 200: 0.995
    ex.push_back(example(std::move(f)));
  }
  testing::write_examples(dir.file("a.tfrecord"), ex);
  StatisticsOptions o;
  o.progress = false;
  return compute_statistics({dir.file("a.tfrecord")}, o);
}

TEST(Schema, InferenceRules) {
  const Schema s = infer_schema(sample_statistics());
  const FeatureSchema* age = s.find("age");
  ASSERT_NE(age, nullptr);
  EXPECT_EQ(age->type, FeatureType::kInt);
  EXPECT_EQ(age->min_fraction, 1.0);
  EXPECT_EQ(age->min_count, 1);
  EXPECT_EQ(age->min_values, 1);
  EXPECT_EQ(age->max_values, 1);
  EXPECT_EQ(age->min, 20);
  EXPECT_EQ(age->max, 69);
  EXPECT_EQ(age->skew, (Comparator{"jensen_shannon_divergence", 0.1}));
  EXPECT_EQ(age->drift, age->skew);
  EXPECT_TRUE(age->domain.empty());

  const FeatureSchema* city = s.find("city");
  EXPECT_EQ(city->type, FeatureType::kBytes);
  EXPECT_EQ(city->domain, (std::vector<std::string>{"Lima", "Oslo", "Pune"}));
  EXPECT_EQ(city->skew, (Comparator{"infinity_norm", 0.1}));
  EXPECT_FALSE(city->min);

  const FeatureSchema* id = s.find("id");  // 200 distinct values > 100: free text
  EXPECT_TRUE(id->domain.empty());
  EXPECT_TRUE(id->skew.metric.empty());

  EXPECT_EQ(s.find("note")->min_fraction, 0);  // 50%: optional, but may not vanish
  EXPECT_EQ(s.find("note")->min_count, 1);
  EXPECT_EQ(s.find("almost")->min_fraction, 0);  // 99.5%: not all, so optional (TFDV's rule)
  EXPECT_EQ(age->range_margin, 0.5);
  EXPECT_EQ(city->domain_min_fraction, 0.9);
  SchemaOptions lax;
  lax.required_fraction = 0.99;  // required from 99% on, rounded down
  EXPECT_EQ(infer_schema(sample_statistics(), lax).find("almost")->min_fraction, 0.99);
  EXPECT_EQ(s.find("score")->max_values, 2);

  const FeatureSchema* img = s.find("image/encoded");
  EXPECT_EQ(img->type, FeatureType::kImage);
  ASSERT_TRUE(img->image_shape);
  EXPECT_EQ(img->image_shape->height, 2);
  EXPECT_EQ(img->image_shape->channels, 3);
  EXPECT_EQ(img->image_formats, std::vector<std::string>{"raw"});
  EXPECT_EQ(s.severity_of("age", "new_feature"), "warning");
  EXPECT_EQ(s.severity_of("age", "skew"), "error");
}

TEST(Schema, TomlRoundTrip) {
  Schema s = infer_schema(sample_statistics());
  // Edits a user might make, and names and values that need escaping.
  FeatureSchema odd;
  odd.name = "we\"ird\\name\nwith\ttabs and é";
  odd.type = FeatureType::kBytes;
  odd.domain = {"a\"b", "back\\slash", "ctl\x01", "del\x7f tab\t nl\n", "ünï"};
  odd.domain_min_fraction = 0.95;
  odd.skew = {"infinity_norm", 0.25};
  odd.severity = {{"out_of_domain", "warning"}};
  s.features.push_back(odd);
  std::sort(s.features.begin(), s.features.end(),
            [](const FeatureSchema& a, const FeatureSchema& b) { return a.name < b.name; });
  s.severity["drift"] = "warning";
  FeatureSchema* score = const_cast<FeatureSchema*>(s.find("score"));
  score->min = -1.5e-7;
  score->max = 3e20;
  const std::string text = schema_to_toml(s);
  const Schema back = parse_schema(text, "schema.toml");
  EXPECT_EQ(back, s) << text;
  EXPECT_EQ(schema_to_toml(back), text);
  EXPECT_EQ(back.severity_of(odd.name, "out_of_domain"), "warning");
  EXPECT_EQ(back.severity_of("age", "drift"), "warning");
  // Readable: comments and the feature's keys by name.
  EXPECT_NE(text.find("# The schema of the training data"), std::string::npos);
  EXPECT_NE(text.find("name = \"age\"\ntype = \"int\"\nmin_fraction = 1.0\nmin_count = 1\n"
                      "values = [1, 1]\nrange = [20, 69]\n"),
            std::string::npos)
      << text;
}

void expect_bad(const std::string& text, const std::string& want) {
  try {
    parse_schema(text, "schema.toml");
    ADD_FAILURE() << "accepted:\n" << text;
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(e.message().find(want), std::string::npos) << e.message();
  }
}

TEST(Schema, BadFilesNameTheLineAndKey) {
  const std::string head = "version = 1\n[[feature]]\nname = \"age\"\ntype = \"int\"\n";
  expect_bad(head + "rang = [1, 2]\n",
             "schema.toml:5: unknown key 'feature[0].rang' (did you mean 'feature[0].range'?)");
  expect_bad(head + "range = [3, 2]\n", "schema.toml:5: 'feature[0].range' must be [min, max]");
  expect_bad(head + "range = \"wide\"\n",
             "schema.toml:5: key 'feature[0].range' must be an array of numbers");
  expect_bad(head + "min_fraction = 1.5\n",
             "schema.toml:5: 'feature[0].min_fraction' must be in [0, 1]");
  expect_bad(head + "severity = { skew = \"fatal\" }\n", "must be \"error\" or \"warning\"");
  expect_bad(head + "severity = { skw = \"error\" }\n",
             "unknown key 'feature[0].severity.skw' (did you mean 'feature[0].severity.skew'?)");
  expect_bad(head + "skew = { infinity_norm = 0.1, jensen_shannon_divergence = 0.1 }\n",
             "takes one of");
  expect_bad(head + "domain = [\"a\", \"a\"]\n", "lists \"a\" twice");
  expect_bad("version = 1\n[[feature]]\nname = \"age\"\ntype = \"complex\"\n",
             "schema.toml:4: 'feature[0].type' = \"complex\"");
  expect_bad("version = 1\n[[feature]]\ntype = \"int\"\n",
             "schema.toml:2: 'feature[0]' has no name");
  expect_bad(head + head.substr(12), "schema.toml:6: feature 'age' is described twice");
  expect_bad("version = 2\n", "schema.toml:1: 'version' = 2");
  expect_bad("[severity]\n", "no 'version'");
  expect_bad("version = 1\n[severity]\nnew_featur = \"error\"\n",
             "schema.toml:3: unknown key 'severity.new_featur'");
  expect_bad("version = 1\nfeature = [\n", "schema.toml:2");
  // toml++ asserted on this one (cmake/toml_config.h): now a syntax error with its line.
  expect_bad("version = 1\n[(severity]\n", "schema.toml:2:2: TOML syntax error");
  // toml++ reached __builtin_unreachable on this one (tern/config/toml_text.h).
  expect_bad("version = 1 \u00A1\n", "schema.toml:1:13: TOML syntax error: a non-ASCII character");
  expect_bad("version = 1\nfeatures = []\n", "unknown key 'features' (did you mean 'feature'?)");
}

TEST(Schema, ReadSchemaNamesAMissingFile) {
  TempDir dir;
  EXPECT_THROW(read_schema(dir.file("none.toml")), Error);
}

}  // namespace
}  // namespace tern::pipeline
