// Prometheus text for a known sequence of requests, TF's names and buckets, label escaping.
#include "tern/serve/metrics.h"
#include "tern/serve/tf_status.h"

#include <gtest/gtest.h>

#include <cmath>

namespace tern::serve {
namespace {

TEST(Metrics, NamesFollowTfServingsExporter) {
  EXPECT_EQ(prometheus_metric_name("/tensorflow/serving/request_count"),
            ":tensorflow:serving:request_count");
  EXPECT_EQ(prometheus_label_name("model-name.x"), "model_name_x");
  EXPECT_EQ(tf_error_code_name(std::nullopt), "OK");
  EXPECT_EQ(tf_error_code_name(ErrorCode::kInvalidArgument), "INVALID_ARGUMENT");
  EXPECT_EQ(tf_error_code_name(ErrorCode::kDeadlineExceeded), "DEADLINE_EXCEEDED");
  const std::vector<double> b = exponential_buckets(10, 1.8, 33);
  ASSERT_EQ(b.size(), 33u);
  EXPECT_EQ(std::vector<double>(b.begin(), b.begin() + 5),
            (std::vector<double>{10, 18, 32.4, 58.32, 104.976}));
  EXPECT_NEAR(b.back(), 10 * std::pow(1.8, 32), 1e-5 * b.back());  // ~1.46e9 µs, ~24 min
}

TEST(Metrics, ExactTextForAKnownSequence) {
  MetricsRegistry r;
  MetricFamily& count =
      r.counter("/tensorflow/serving/request_count", "Requests.", {"model_name", "status"});
  MetricFamily& latency = r.histogram("/tensorflow/serving/request_latency", "Latency.",
                                      {"model_name"}, {10, 18, 32.4});
  MetricFamily& loaded = r.gauge("/tern/serving/loaded_versions", "Loaded.", {"model_name"});
  count.add({"m", "OK"});
  count.add({"m", "OK"});
  count.add({"m", "NOT_FOUND"});
  latency.observe({"m"}, 10);  // on a bound: counted in that bucket (le)
  latency.observe({"m"}, 25.5);
  latency.observe({"m"}, 1000);  // +Inf only
  loaded.set({"m"}, 2);
  loaded.set({"m"}, 1);
  EXPECT_EQ(r.prometheus_text(),
            "# HELP :tensorflow:serving:request_count Requests.\n"
            "# TYPE :tensorflow:serving:request_count counter\n"
            ":tensorflow:serving:request_count{model_name=\"m\",status=\"NOT_FOUND\"} 1\n"
            ":tensorflow:serving:request_count{model_name=\"m\",status=\"OK\"} 2\n"
            "# HELP :tensorflow:serving:request_latency Latency.\n"
            "# TYPE :tensorflow:serving:request_latency histogram\n"
            ":tensorflow:serving:request_latency_bucket{model_name=\"m\",le=\"10\"} 1\n"
            ":tensorflow:serving:request_latency_bucket{model_name=\"m\",le=\"18\"} 1\n"
            ":tensorflow:serving:request_latency_bucket{model_name=\"m\",le=\"32.4\"} 2\n"
            ":tensorflow:serving:request_latency_bucket{model_name=\"m\",le=\"+Inf\"} 3\n"
            ":tensorflow:serving:request_latency_sum{model_name=\"m\"} 1035.5\n"
            ":tensorflow:serving:request_latency_count{model_name=\"m\"} 3\n"
            "# HELP :tern:serving:loaded_versions Loaded.\n"
            "# TYPE :tern:serving:loaded_versions gauge\n"
            ":tern:serving:loaded_versions{model_name=\"m\"} 1\n");
  EXPECT_EQ(count.value({"m", "OK"}), 2);
  EXPECT_EQ(latency.value({"m"}), 3);
  EXPECT_EQ(count.value({"other", "OK"}), 0);
}

TEST(Metrics, ServingMetricsRecordOkLatencyOnlyAndPerVersionSeries) {
  ServingMetrics m;
  m.record_request("half", 2, "predict", "REST", std::nullopt, std::chrono::microseconds(25));
  m.record_request("half", 2, "predict", "REST", ErrorCode::kInvalidArgument,
                   std::chrono::microseconds(5));
  m.record_request("nope", -1, "predict", "REST", ErrorCode::kNotFound,
                   std::chrono::microseconds(3));
  const std::string text = m.prometheus_text();
  auto has = [&](const std::string& line) { return text.find(line + "\n") != std::string::npos; };
  EXPECT_TRUE(has(":tensorflow:serving:request_count{model_name=\"half\",status=\"OK\"} 1"));
  EXPECT_TRUE(
      has(":tensorflow:serving:request_count{model_name=\"half\",status=\"INVALID_ARGUMENT\"} 1"));
  EXPECT_TRUE(has(":tensorflow:serving:request_count{model_name=\"nope\",status=\"NOT_FOUND\"} 1"));
  // Latency: the OK request only, 25 µs lands in le="32.4".
  EXPECT_TRUE(
      has(":tensorflow:serving:request_latency_bucket{model_name=\"half\",API=\"predict\","
          "entrypoint=\"REST\",le=\"18\"} 0"));
  EXPECT_TRUE(
      has(":tensorflow:serving:request_latency_bucket{model_name=\"half\",API=\"predict\","
          "entrypoint=\"REST\",le=\"32.4\"} 1"));
  EXPECT_TRUE(
      has(":tensorflow:serving:request_latency_count{model_name=\"half\",API=\"predict\","
          "entrypoint=\"REST\"} 1"));
  EXPECT_TRUE(
      has(":tensorflow:serving:request_latency_sum{model_name=\"half\",API=\"predict\","
          "entrypoint=\"REST\"} 25"));
  EXPECT_EQ(text.find("model_name=\"nope\",API="), std::string::npos);
  EXPECT_TRUE(
      has(":tern:serving:version_request_count{model_name=\"half\",version=\"2\","
          "status=\"OK\"} 1"));
  EXPECT_TRUE(
      has(":tern:serving:version_request_count{model_name=\"half\",version=\"2\","
          "status=\"INVALID_ARGUMENT\"} 1"));
  EXPECT_TRUE(
      has(":tern:serving:version_request_latency_count{model_name=\"half\",version=\"2\"} 1"));
  EXPECT_EQ(text.find("version=\"-1\""), std::string::npos);

  m.record_batch("half", "pool", 3, 4,
                 {std::chrono::microseconds(1), std::chrono::microseconds(2)});
  EXPECT_EQ(m.queuing_latency.value({"pool"}), 2);
  EXPECT_EQ(m.padding_size.value({"half"}), 1);
  const std::string after = m.prometheus_text();
  EXPECT_NE(
      after.find(":tensorflow:serving:batching:processed_batch_size_bucket{model_name=\"half\","
                 "le=\"2\"} 0\n"),
      std::string::npos);
  EXPECT_NE(
      after.find(":tensorflow:serving:batching:processed_batch_size_bucket{model_name=\"half\","
                 "le=\"4\"} 1\n"),
      std::string::npos);
}

TEST(Metrics, LabelValuesAreEscapedAndMisuseIsAnError) {
  MetricsRegistry r;
  MetricFamily& c = r.counter("/x/count", "X.", {"model_name"});
  c.add({"a\"b\\c\nd"});
  EXPECT_NE(r.prometheus_text().find(":x:count{model_name=\"a\\\"b\\\\c\\nd\"} 1\n"),
            std::string::npos);
  EXPECT_THROW(c.add({"m"}, -1), Error);                    // counters only go up
  EXPECT_THROW(c.add({"m", "extra"}), Error);               // label count
  EXPECT_THROW(c.observe({"m"}, 1), Error);                 // not a histogram
  EXPECT_THROW(r.counter("/x/count", "again", {}), Error);  // registered twice
}

}  // namespace
}  // namespace tern::serve
