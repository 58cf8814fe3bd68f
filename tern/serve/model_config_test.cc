// TF Serving's config files: a model config as TF's docs write it, policies, labels, the
// traffic split extension, batching parameters and monitoring config, and their errors.
#include "tern/serve/model_config.h"

#include <gtest/gtest.h>

namespace tern::serve {
namespace {

std::string error_message(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << e.what();
    return e.message();
  }
  ADD_FAILURE() << "no error thrown";
  return "";
}

TEST(ModelConfig, ParsesTfServingsDocumentedExample) {
  const auto models = parse_model_config(
      "model_config_list {\n"
      "  config {\n"
      "    name: 'my_model'  base_path: '/models/my_model'  model_platform: 'tensorflow'\n"
      "    model_version_policy { specific { versions: 43 versions: 42 } }\n"
      "    version_labels { key: 'stable' value: 42 }\n"
      "    version_labels { key: 'canary' value: 43 }\n"
      "  }\n"
      "  config { name: 'other' base_path: '/models/other' }\n"
      "  config { name: 'all' base_path: '/a' model_version_policy: { all: {} } }\n"
      "  config { name: 'l3' base_path: '/b' model_version_policy { latest { num_versions: 3 } } "
      "}\n"
      "}\n",
      "models.config");
  ASSERT_EQ(models.size(), 4u);
  EXPECT_EQ(models[0].name, "my_model");
  EXPECT_EQ(models[0].base_path, "/models/my_model");
  EXPECT_EQ(models[0].platform, "tensorflow");
  EXPECT_EQ(models[0].policy.kind, VersionPolicy::Kind::kSpecific);
  EXPECT_EQ(models[0].policy.versions, (std::vector<int64_t>{42, 43}));
  EXPECT_EQ(models[0].labels, (std::map<std::string, int64_t>{{"canary", 43}, {"stable", 42}}));
  EXPECT_EQ(models[1].policy, VersionPolicy{});  // unset: latest 1
  EXPECT_EQ(models[2].policy.kind, VersionPolicy::Kind::kAll);
  EXPECT_EQ(models[3].policy.num_versions, 3);
  EXPECT_TRUE(parse_model_config("", "empty.config").empty());
}

TEST(ModelConfig, ErrorsNameTheFileLineAndModel) {
  EXPECT_EQ(error_message([] {
              parse_model_config("model_config_list {\n config {\n  name: 'm'\n  base_pth: '/x'\n",
                                 "a.config");
            }).substr(0, 11),
            "a.config:4:");
  EXPECT_EQ(error_message([] {
              parse_model_config("model_config_list { config { name: 'm' } }", "a.config");
            }),
            "a.config: model 'm' has no base_path");
  EXPECT_EQ(error_message([] {
              parse_model_config(
                  "model_config_list { config { name: 'm' base_path: '/x' } "
                  "config { name: 'm' base_path: '/y' } }",
                  "a.config");
            }),
            "a.config: model 'm' is configured twice");
  EXPECT_EQ(error_message([] {
              parse_model_config("model_config_list { config { base_path: '/x' } }", "a.config");
            }),
            "a.config: config #1 in model_config_list has no name");
  EXPECT_EQ(error_message([] {
              parse_model_config(
                  "model_config_list { config { name: 'm' base_path: '/x' "
                  "model_version_policy { specific {} } } }",
                  "a.config");
            }),
            "a.config: model 'm': model_version_policy specific lists no versions");
}

TEST(ModelConfig, TrafficSplitExtension) {
  const auto models = parse_model_config(
      "model_config_list { config { name: 'm' base_path: '/x'\n"
      "  version_labels { key: 'stable' value: 1 } version_labels { key: 'canary' value: 2 }\n"
      "  traffic_split { key: 'stable' value: 90 } traffic_split { key: 'canary' value: 10 } } }",
      "a.config");
  EXPECT_EQ(models.at(0).traffic_split,
            (std::map<std::string, int64_t>{{"canary", 10}, {"stable", 90}}));
  EXPECT_NE(error_message([] {
              parse_model_config(
                  "model_config_list { config { name: 'm' base_path: '/x'\n"
                  "  version_labels { key: 'stable' value: 1 }\n"
                  "  traffic_split { key: 'stable' value: 0 } } }",
                  "a.config");
            }).find("traffic_split label 'stable' has percent 0"),
            std::string::npos);
}

TEST(BatchingParameters, ParsesTfServingsExampleAndKeepsDefaults) {
  BatchingOptions o = parse_batching_parameters(
      "max_batch_size { value: 128 }\nbatch_timeout_micros { value: 0 }\n"
      "max_enqueued_batches { value: 1000000 }\nnum_batch_threads { value: 8 }\n",
      "b.config");
  EXPECT_EQ(o.max_batch_size, 128);
  EXPECT_EQ(o.batch_timeout_micros, 0);
  EXPECT_EQ(o.max_enqueued_batches, 1000000);
  EXPECT_EQ(o.num_batch_threads, 8);
  BatchingOptions d = parse_batching_parameters("", "b.config");
  EXPECT_EQ(d.max_batch_size, 1000);
  EXPECT_EQ(d.max_enqueued_batches, 10);
  EXPECT_EQ(d.num_batch_threads, 0);  // hardware threads
  BatchingOptions padded = parse_batching_parameters(
      "max_batch_size { value: 8 } allowed_batch_sizes: 2 allowed_batch_sizes: 8", "b.config");
  EXPECT_EQ(padded.allowed_batch_sizes, (std::vector<int64_t>{2, 8}));
  EXPECT_EQ(error_message([] {
              parse_batching_parameters("max_batch_size: 5", "b.config");
            }).substr(0, 11),
            "b.config:1:");
  EXPECT_EQ(error_message(
                [] { parse_batching_parameters("num_batch_threads { value: 0 }", "b.config"); }),
            "b.config: num_batch_threads must be in 1..4096, got 0");
}

TEST(MonitoringConfig, ParsesPrometheusConfig) {
  MonitoringConfig m =
      parse_monitoring_config("prometheus_config { enable: true, path: '/metrics' }", "m.config");
  EXPECT_TRUE(m.prometheus_enable);
  EXPECT_EQ(m.prometheus_path, "/metrics");
  MonitoringConfig d = parse_monitoring_config("prometheus_config { enable: true }", "m.config");
  EXPECT_EQ(d.prometheus_path, "/monitoring/prometheus/metrics");
  EXPECT_FALSE(parse_monitoring_config("", "m.config").prometheus_enable);
}

}  // namespace
}  // namespace tern::serve
