// TF Serving's configuration files, parsed with the protos in tern/serve/proto/ into plain
// structs: the model config file (--model_config_file, a text ModelServerConfig), the batching
// parameters file (--batching_parameters_file, a text BatchingParameters) and the monitoring
// config file (--monitoring_config_file, a text MonitoringConfig). Syntax errors name the file,
// line and column; semantic errors name the file and the model or field. It does not watch files
// or load anything (server_core.h does).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "tern/serve/batcher.h"

namespace tern::serve {

// ServableVersionPolicy: which numeric version folders of a base path are served.
struct VersionPolicy {
  enum class Kind { kLatest, kAll, kSpecific };
  Kind kind = Kind::kLatest;
  int64_t num_versions = 1;       // kLatest (an unset or 0 num_versions means 1)
  std::vector<int64_t> versions;  // kSpecific: increasing, no duplicates
  bool operator==(const VersionPolicy&) const = default;
};

// One `config { ... }` entry of a model config file.
struct ModelConfig {
  std::string name;
  std::string base_path;
  std::string platform;  // model_platform, e.g. "tensorflow" (kept, not interpreted)
  VersionPolicy policy;
  std::map<std::string, int64_t> labels;         // version_labels: label -> version
  std::map<std::string, int64_t> traffic_split;  // tern: label -> percent (sum 100), or empty
  bool operator==(const ModelConfig&) const = default;
};

// A ModelServerConfig text proto. `source` names the text in errors (the file path).
// InvalidArgument: syntax (source:line:column), an empty or duplicate model name, an empty
// base_path, a specific policy without versions, a negative label version, a traffic split whose
// label is not in version_labels, whose percent is not positive or whose percents do not add up
// to 100.
std::vector<ModelConfig> parse_model_config(const std::string& text, const std::string& source);
// Reads and parses `path`; NotFound when it cannot be read.
std::vector<ModelConfig> read_model_config_file(const std::string& path);

// A BatchingParameters text proto; unset fields keep BatchingOptions' defaults. Checked with
// validate_batching_options (errors name `source`).
BatchingOptions parse_batching_parameters(const std::string& text, const std::string& source);
BatchingOptions read_batching_parameters_file(const std::string& path);

inline constexpr const char* kPrometheusPath = "/monitoring/prometheus/metrics";

// MonitoringConfig: whether and where the Prometheus metrics are served.
struct MonitoringConfig {
  bool prometheus_enable = false;
  std::string prometheus_path = kPrometheusPath;  // the default when the file leaves it empty
};
MonitoringConfig parse_monitoring_config(const std::string& text, const std::string& source);
MonitoringConfig read_monitoring_config_file(const std::string& path);

}  // namespace tern::serve
