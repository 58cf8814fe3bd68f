// Evaluation: metrics against hand-computed values, slices, and each blessing outcome.
#include "tern/pipeline/evaluation.h"

#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>

namespace tern::pipeline {
namespace {

std::vector<EvalRow> rows() {
  // Two classes; logits (2, 0) predict class 0, (0, 2) class 1.
  return {{0, {2, 0}, {{"make", "audi"}}},
          {0, {0, 2}, {{"make", "audi"}}},
          {1, {0, 2}, {{"make", "bmw"}}},
          {1, {0, 2}, {}}};
}

TEST(Evaluation, MetricsAndSlices) {
  Metrics m = compute_metrics(rows());
  EXPECT_EQ(m.count, 4);
  EXPECT_DOUBLE_EQ(m.accuracy, 0.75);
  const double right = std::log(1 + std::exp(-2.0)), wrong = std::log(1 + std::exp(2.0));
  EXPECT_NEAR(m.loss, (3 * right + wrong) / 4, 1e-12);
  auto pc = per_class_metrics(rows(), {"fwd", "rwd"});
  ASSERT_EQ(pc.size(), 2u);
  EXPECT_EQ(pc[0].name, "fwd");
  EXPECT_EQ(pc[0].support, 2);
  EXPECT_DOUBLE_EQ(pc[0].precision, 1.0);
  EXPECT_DOUBLE_EQ(pc[0].recall, 0.5);
  EXPECT_DOUBLE_EQ(pc[1].precision, 2.0 / 3);
  auto sl = slice_metrics(rows(), {"make"});
  ASSERT_EQ(sl.size(), 3u);
  EXPECT_EQ(sl[0].value, "audi");  // most examples first
  EXPECT_DOUBLE_EQ(sl[0].metrics.accuracy, 0.5);
  EXPECT_EQ(sl[1].value, "(missing)");
  EXPECT_EQ(sl[2].value, "bmw");
}

TEST(Evaluation, BlessingThresholdsAndRegression) {
  EvaluateSettings s;
  s.thresholds["accuracy"] = 0.7;
  s.max_regression = 0.01;
  Evaluation e;
  e.model_name = "m";
  e.overall = compute_metrics(rows());  // 0.75
  decide_blessing(s, e);
  EXPECT_TRUE(e.blessed);
  EXPECT_NE(e.reason.find("accuracy 0.7500 >= 0.7000 (threshold)"), std::string::npos) << e.reason;
  EXPECT_NE(e.reason.find("nothing served yet"), std::string::npos) << e.reason;

  e.baseline = Baseline{3, "/srv/m/3", Metrics{4, 0.755, 0.5}, ""};
  decide_blessing(s, e);
  EXPECT_TRUE(e.blessed) << e.reason;  // 0.75 >= 0.755 - 0.01
  e.baseline->metrics->accuracy = 0.80;
  decide_blessing(s, e);
  EXPECT_FALSE(e.blessed);
  EXPECT_NE(e.reason.find("vs served version 3's 0.8000"), std::string::npos) << e.reason;
  EXPECT_NE(e.reason.find("a drop beyond the allowed 0.0100"), std::string::npos) << e.reason;

  s.thresholds["accuracy"] = 0.9;
  e.baseline.reset();
  decide_blessing(s, e);
  EXPECT_FALSE(e.blessed);
  EXPECT_NE(e.reason.find("accuracy 0.7500 < 0.9000 (threshold)"), std::string::npos) << e.reason;
  auto j = nlohmann::json::parse(evaluation_json(e, s));
  EXPECT_EQ(j["blessed"], false);
  EXPECT_EQ(j["checks"][0]["passed"], false);
  const std::string md = evaluation_markdown(e, s);
  EXPECT_NE(md.find("**Not blessed**: accuracy 0.7500 < 0.9000"), std::string::npos) << md;

  // A baseline that could not be evaluated: thresholds alone decide, and the report says so.
  s.thresholds["accuracy"] = 0.5;
  e.baseline = Baseline{2, "/srv/m/2", std::nullopt, "input 'make' missing"};
  decide_blessing(s, e);
  EXPECT_TRUE(e.blessed);
  EXPECT_NE(e.reason.find("could not be evaluated on this data: input 'make' missing"),
            std::string::npos);
  Evaluation empty;
  decide_blessing(s, empty);
  EXPECT_FALSE(empty.blessed);
}

}  // namespace
}  // namespace tern::pipeline
