// validate_statistics with injected faults (a dropped column, a new category, values out of
// range, a shifted distribution, a type change, more values per example, drift), each found with
// the right kind, feature and numbers, and clean data giving none; the distances; the files.
#include "tern/pipeline/validate.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <functional>

#include "tern/base/error.h"
#include "tern/io/atomic_file.h"
#include "tern/pipeline/test_util.h"

namespace tern::pipeline {
namespace {

using data::Example;
using data::Feature;
using testing::TempDir;

const char* const kMakes[] = {"audi", "bmw", "fiat", "ford"};

// Record k of a synthetic tabular set; `fault` edits it.
Example row(int k, const std::function<void(int, data::Features&)>& fault) {
  data::Features f = {
      {"age", Feature::int64s({20 + (k * 37) % 50})},
      {"make", Feature::bytes({kMakes[(k * 13) % 4]})},
      {"price", Feature::floats({1000 + static_cast<float>((k * 7919) % 1000) * 2.5f})},
      {"id", Feature::bytes({"row" + std::to_string(k)})}};
  if (fault) fault(k, f);
  return Example{std::move(f)};
}

DatasetStatistics stats(int begin, int end,
                        const std::function<void(int, data::Features&)>& fault = {}) {
  TempDir dir;
  std::vector<Example> ex;
  for (int k = begin; k < end; ++k) ex.push_back(row(k, fault));
  testing::write_examples(dir.file("s.tfrecord"), ex);
  StatisticsOptions o;
  o.progress = false;
  return compute_statistics({dir.file("s.tfrecord")}, o);
}

class Validate : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    train_ = new DatasetStatistics(stats(0, 1000));
    schema_ = new Schema(infer_schema(*train_));
  }
  static void TearDownTestSuite() {
    delete train_;
    delete schema_;
  }
  // The anomalies of a faulted eval split.
  static std::vector<Anomaly> with_eval(const std::function<void(int, data::Features&)>& fault) {
    const DatasetStatistics eval = stats(1000, 1300, fault);
    return validate_statistics(*schema_, *train_, &eval, nullptr);
  }
  static const Anomaly& only(const std::vector<Anomaly>& a, const std::string& kind) {
    static const Anomaly none;
    std::vector<const Anomaly*> found;
    for (const Anomaly& x : a)
      if (x.kind == kind) found.push_back(&x);
    EXPECT_EQ(found.size(), 1u) << kind << " in:\n" << anomalies_to_markdown(a);
    return found.empty() ? none : *found[0];
  }
  static DatasetStatistics* train_;
  static Schema* schema_;
};
DatasetStatistics* Validate::train_ = nullptr;
Schema* Validate::schema_ = nullptr;

TEST_F(Validate, CleanDataGivesNone) {
  const DatasetStatistics eval = stats(1000, 1300);
  const DatasetStatistics previous = stats(5000, 6000);
  const std::vector<Anomaly> a = validate_statistics(*schema_, *train_, &eval, &previous);
  EXPECT_TRUE(a.empty()) << anomalies_to_markdown(a);
  EXPECT_FALSE(has_errors(a));
}

TEST_F(Validate, DroppedColumn) {
  const auto a = with_eval([](int, data::Features& f) { f.erase("make"); });
  const Anomaly& x = only(a, "missing_feature");
  EXPECT_EQ(x.feature, "make");
  EXPECT_EQ(x.split, "eval");
  EXPECT_EQ(x.severity, "error");
  EXPECT_NE(x.message.find("missing from all 300 eval examples"), std::string::npos) << x.message;
  EXPECT_TRUE(has_errors(a));
}

TEST_F(Validate, NewCategory) {
  // 50 of 300 values (16.7%): more than the 10% domain_min_fraction tolerates.
  auto tesla = [](int k, data::Features& f) {
    if (k % 6 == 0) f["make"] = Feature::bytes({"tesla"});
  };
  const auto a = with_eval(tesla);
  const Anomaly& x = only(a, "out_of_domain");
  EXPECT_EQ(x.feature, "make");
  EXPECT_EQ(x.severity, "error");
  EXPECT_NE(x.message.find("'tesla' (50)"), std::string::npos) << x.message;
  EXPECT_NE(
      x.message.find(
          "'tesla' (50) outside the schema's domain of 4 values: 50 of 300 eval values (16.7%)"),
      std::string::npos)
      << x.message;
  // Tolerated while the domain holds at least domain_min_fraction of the values: a warning.
  Schema relaxed = *schema_;
  for (FeatureSchema& f : relaxed.features)
    if (f.name == "make") f.domain_min_fraction = 0.8;
  const DatasetStatistics eval = stats(1000, 1300, tesla);
  const auto b = validate_statistics(relaxed, *train_, &eval, nullptr);
  EXPECT_EQ(only(b, "out_of_domain").severity, "warning");
  // (a sixth of the values moved to a new one is also a skew of 'tesla''s share)
  EXPECT_NE(only(b, "skew").message.find("at 'tesla'"), std::string::npos);
  // A few new values (8 of 300) stay under the default tolerance.
  const auto c = with_eval([](int k, data::Features& f) {
    if (k % 40 == 0) f["make"] = Feature::bytes({"tesla"});
  });
  EXPECT_EQ(only(c, "out_of_domain").severity, "warning");
}

TEST_F(Validate, ValuesOutOfRange) {
  const auto a = with_eval([](int k, data::Features& f) {
    if (k % 10 == 0) f["age"] = Feature::int64s({412});
  });
  const Anomaly& x = only(a, "out_of_range");
  EXPECT_EQ(x.feature, "age");
  EXPECT_EQ(x.split, "eval");
  EXPECT_NE(x.message.find(
                "eval values up to 412 outside the schema's range [20, 69] (30 of 300 values)"),
            std::string::npos)
      << x.message;
  // The schema can lower the severity of one kind for one feature.
  Schema lenient = *schema_;
  for (FeatureSchema& f : lenient.features)
    if (f.name == "age") f.severity["out_of_range"] = f.severity["skew"] = "warning";
  const DatasetStatistics eval = stats(1000, 1300, [](int k, data::Features& f) {
    if (k % 10 == 0) f["age"] = Feature::int64s({412});
  });
  EXPECT_FALSE(has_errors(validate_statistics(lenient, *train_, &eval, nullptr)));
}

TEST(ValidateRange, WithoutAValueListTheCountComesFromTheHistogram) {
  DatasetStatistics s;
  s.examples = 10;
  FeatureStatistics f;
  f.name = "v";
  f.count = 10;
  f.num_values = 10;
  f.min_values = f.max_values = 1;
  f.numeric = NumericStatistics{};
  f.numeric->finite = 10;
  f.numeric->min = 0;
  f.numeric->max = 20;
  f.numeric->histogram = {{0, 10, 5}, {10, 20, 5}};
  s.features = {f};
  Schema schema = infer_schema(s);
  schema.features[0].max = 15;
  schema.features[0].skew = {};
  const auto a = validate_statistics(schema, s, nullptr, nullptr);
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].message,
            "feature 'v': train values up to 20 outside the schema's range [0, 15] (about 3 of 10 "
            "values), within range_margin 0.5 of its width: a warning");
  EXPECT_EQ(a[0].severity, "warning");
  schema.features[0].range_margin = 0.2;  // 20 is more than 0.2 x 15 past 15: an error
  const auto b = validate_statistics(schema, s, nullptr, nullptr);
  EXPECT_EQ(b.at(0).severity, "error");
}

TEST_F(Validate, ShiftedNumericDistribution) {
  // Within the range, but eval prices only from the top fifth.
  const auto a = with_eval([](int k, data::Features& f) {
    f["price"] = Feature::floats({3000 + static_cast<float>((k * 7919) % 200) * 2.5f});
  });
  const Anomaly& x = only(a, "skew");
  EXPECT_EQ(x.feature, "price");
  EXPECT_EQ(x.split, "train vs eval");
  EXPECT_NE(x.message.find("Jensen-Shannon divergence"), std::string::npos) << x.message;
  EXPECT_EQ(a.size(), 1u) << anomalies_to_markdown(a);
}

TEST_F(Validate, ShiftedCategoricalDistribution) {
  const auto a = with_eval([](int k, data::Features& f) {
    if (k % 2 == 0) f["make"] = Feature::bytes({"audi"});
  });
  const Anomaly& x = only(a, "skew");
  EXPECT_EQ(x.feature, "make");
  EXPECT_NE(
      x.message.find(
          "differ by 0.25 (L-infinity, at 'audi': 25.0% of train values, 50.0% of eval), above the "
          "skew threshold 0.1 and the 0.12"),
      std::string::npos)
      << x.message;
}

TEST_F(Validate, TypeChange) {
  const auto a = with_eval([](int k, data::Features& f) {
    f["age"] = Feature::floats({20.5f + static_cast<float>(k % 40)});
  });
  const Anomaly& x = only(a, "type_change");
  EXPECT_EQ(x.feature, "age");
  EXPECT_NE(x.message.find("eval holds float values (300 examples), the schema says int"),
            std::string::npos)
      << x.message;
  // Some examples of another type.
  const auto b = with_eval([](int k, data::Features& f) {
    if (k % 100 == 0) f["age"] = Feature::floats({30});
  });
  EXPECT_NE(only(b, "type_change").message.find("3 eval examples hold float values"),
            std::string::npos);
}

TEST_F(Validate, ValueCountAndNewFeature) {
  const auto a = with_eval([](int k, data::Features& f) {
    f["age"] = Feature::int64s({20 + k % 40, 21});
    f["extra"] = Feature::floats({1});
  });
  EXPECT_NE(only(a, "value_count")
                .message.find("eval examples hold 2 to 2 values, the schema allows 1 to 1"),
            std::string::npos);
  const Anomaly& n = only(a, "new_feature");
  EXPECT_EQ(n.feature, "extra");
  EXPECT_EQ(n.severity, "warning");
}

TEST_F(Validate, DriftAgainstThePreviousRun) {
  const DatasetStatistics eval = stats(1000, 1300);
  const DatasetStatistics previous = stats(0, 1000, [](int k, data::Features& f) {
    f["price"] = Feature::floats({1000 + static_cast<float>((k * 7919) % 200) * 2.5f});
  });
  const auto a = validate_statistics(*schema_, *train_, &eval, &previous);
  const Anomaly& x = only(a, "drift");
  EXPECT_EQ(x.feature, "price");
  EXPECT_EQ(x.split, "previous vs train");
  EXPECT_NE(x.message.find("above the drift threshold 0.1"), std::string::npos) << x.message;
}

TEST(Distances, JensenShannonAndLInfinity) {
  NumericStatistics a, b;
  a.histogram = {{0, 1, 10}, {1, 2, 0}};
  b.histogram = {{0, 1, 0}, {1, 2, 10}};
  EXPECT_DOUBLE_EQ(js_divergence(a, b), 1);  // disjoint: log2(2)
  EXPECT_DOUBLE_EQ(js_divergence(a, a), 0);
  NumericStatistics c;
  c.histogram = {{0, 2, 10}};  // the same mass over [0, 2] in one bin: half each
  // p = [1, 0], q = [1/2, 1/2], m = [3/4, 1/4]
  EXPECT_NEAR(
      js_divergence(a, c),
      0.5 * std::log2(1 / 0.75) + 0.5 * (0.5 * std::log2(0.5 / 0.75) + 0.5 * std::log2(0.5 / 0.25)),
      1e-12);
  BytesStatistics x, y;
  x.value_counts = {{"a", 5}, {"b", 5}};
  y.value_counts = {{"a", 2}, {"b", 6}, {"c", 2}};
  EXPECT_DOUBLE_EQ(linf_distance(x, y), 0.3);
}

TEST(Anomalies, FilesRoundTripAndEscape) {
  TempDir dir;
  const std::vector<Anomaly> a = {
      {"<script>alert(1)</script>", "new_feature", "warning", "feature '<script>' | x", "eval"},
      {"age", "out_of_range", "error", "feature 'age': eval values up to 412", "eval"}};
  write_anomalies(a, dir.file("v"));
  EXPECT_EQ(read_anomalies_json(dir.file("v/anomalies.json")), a);
  const std::string md = io::read_file(dir.file("v/anomalies.md"));
  EXPECT_NE(md.find("# Data validation: 1 error, 1 warning"), std::string::npos) << md;
  EXPECT_EQ(md.find("<script>"), std::string::npos) << md;
  EXPECT_NE(md.find("&lt;script&gt;"), std::string::npos) << md;
  EXPECT_NE(md.find("\\| x"), std::string::npos) << md;
  try {
    parse_anomalies_json(R"({"format": "tern.anomalies", "version": 1, "errors": 1, "warnings": 0,
      "anomalies": [{"feature": "a", "kind": "k", "severity": "fatal", "split": "", "message": ""}]})",
                         "anomalies.json");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(e.message().find("anomalies.json: anomalies[0].severity"), std::string::npos)
        << e.what();
  }
  write_anomalies({}, dir.file("clean"));
  EXPECT_NE(io::read_file(dir.file("clean/anomalies.md")).find("0 errors, 0 warnings"),
            std::string::npos);
}

}  // namespace
}  // namespace tern::pipeline
