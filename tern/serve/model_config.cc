// TF Serving's text-format config files, parsed with protobuf's TextFormat into plain structs.
#include "tern/serve/model_config.h"

#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/text_format.h>

#include <algorithm>
#include <set>

#include "tern/io/atomic_file.h"
#include "tern/serve/proto/model_server_config.pb.h"
#include "tern/serve/proto/monitoring_config.pb.h"
#include "tern/serve/proto/session_bundle_config.pb.h"

namespace tern::serve {
namespace {

namespace pb = google::protobuf;

// Keeps the first error with its position (TextFormat's lines and columns are 0-based).
class FirstError : public pb::io::ErrorCollector {
 public:
  void AddError(int line, pb::io::ColumnNumber column, const std::string& message) override {
    if (message_.empty()) message_ = str_cat(line + 1, ":", column + 1, ": ", message);
  }
  const std::string& message() const { return message_; }

 private:
  std::string message_;
};

void parse_text(const std::string& text, const std::string& source, pb::Message* message) {
  FirstError errors;
  pb::TextFormat::Parser parser;
  parser.RecordErrorsTo(&errors);
  if (!parser.ParseFromString(text, message)) {
    throw_error(ErrorCode::kInvalidArgument, source, ":",
                errors.message().empty() ? " cannot parse as a text " : errors.message(),
                errors.message().empty() ? message->GetTypeName() : "");
  }
}

// A regular file of at most 64 MiB (text protos are small): /dev/zero or a FIFO as a config file
// grew or blocked forever (bad-input report F14).
std::string read_file(const std::string& path, const char* what) {
  try {
    return io::read_file(path, uint64_t{64} << 20);
  } catch (const Error& e) {
    throw_error(e.code(), "cannot read the ", what, " ", path, ": ", e.message());
  }
}

VersionPolicy version_policy_from(
    const tensorflow::serving::FileSystemStoragePathSourceConfig::ServableVersionPolicy& p,
    const std::string& where) {
  using P = tensorflow::serving::FileSystemStoragePathSourceConfig::ServableVersionPolicy;
  VersionPolicy policy;
  switch (p.policy_choice_case()) {
    case P::kLatest:
      policy.kind = VersionPolicy::Kind::kLatest;
      policy.num_versions = std::max<int64_t>(1, p.latest().num_versions());
      break;
    case P::kAll:
      policy.kind = VersionPolicy::Kind::kAll;
      break;
    case P::kSpecific: {
      policy.kind = VersionPolicy::Kind::kSpecific;
      std::set<int64_t> versions(p.specific().versions().begin(), p.specific().versions().end());
      TERN_CHECK_ARG(!versions.empty(), where, ": model_version_policy specific lists no versions");
      TERN_CHECK_ARG(*versions.begin() >= 0, where, ": version ", *versions.begin(),
                     " in model_version_policy specific is negative");
      policy.versions.assign(versions.begin(), versions.end());
      break;
    }
    case P::POLICY_CHOICE_NOT_SET:
      break;  // the default: latest 1
  }
  return policy;
}

}  // namespace

// --- model config ---

std::vector<ModelConfig> parse_model_config(const std::string& text, const std::string& source) {
  tensorflow::serving::ModelServerConfig proto;
  parse_text(text, source, &proto);
  std::vector<ModelConfig> models;
  std::set<std::string> names;
  for (const auto& c : proto.model_config_list().config()) {
    const std::string where = str_cat(source, ": model '", c.name(), "'");
    TERN_CHECK_ARG(!c.name().empty(), source, ": config #", models.size() + 1,
                   " in model_config_list has no name");
    TERN_CHECK_ARG(names.insert(c.name()).second, source, ": model '", c.name(),
                   "' is configured twice");
    TERN_CHECK_ARG(!c.base_path().empty(), where, " has no base_path");
    ModelConfig m;
    m.name = c.name();
    m.base_path = c.base_path();
    m.platform = c.model_platform();
    if (c.has_model_version_policy())
      m.policy = version_policy_from(c.model_version_policy(), where);
    for (const auto& [label, version] : c.version_labels()) {
      TERN_CHECK_ARG(!label.empty(), where, ": a version label is empty");
      TERN_CHECK_ARG(version >= 0, where, ": label '", label, "' points to negative version ",
                     version);
      m.labels[label] = version;
    }
    int64_t total = 0;
    for (const auto& [label, percent] : c.traffic_split()) {
      TERN_CHECK_ARG(m.labels.count(label), where, ": traffic_split label '", label,
                     "' is not in version_labels");
      TERN_CHECK_ARG(percent > 0 && percent <= 100, where, ": traffic_split label '", label,
                     "' has percent ", percent, " (must be in 1..100)");
      m.traffic_split[label] = percent;
      total += percent;
    }
    TERN_CHECK_ARG(m.traffic_split.empty() || total == 100, where,
                   ": traffic_split percents add up to ", total, ", not 100");
    models.push_back(std::move(m));
  }
  return models;
}

std::vector<ModelConfig> read_model_config_file(const std::string& path) {
  return parse_model_config(read_file(path, "model config file"), path);
}

// --- batching parameters ---

BatchingOptions parse_batching_parameters(const std::string& text, const std::string& source) {
  tensorflow::serving::BatchingParameters proto;
  parse_text(text, source, &proto);
  BatchingOptions o;
  if (proto.has_max_batch_size()) o.max_batch_size = proto.max_batch_size().value();
  if (proto.has_batch_timeout_micros())
    o.batch_timeout_micros = proto.batch_timeout_micros().value();
  if (proto.has_max_enqueued_batches())
    o.max_enqueued_batches = proto.max_enqueued_batches().value();
  if (proto.has_num_batch_threads()) {
    const int64_t n = proto.num_batch_threads().value();
    TERN_CHECK_ARG(n >= 1 && n <= 4096, source, ": num_batch_threads must be in 1..4096, got ", n);
    o.num_batch_threads = static_cast<int>(n);
  }
  if (proto.has_thread_pool_name()) o.thread_pool_name = proto.thread_pool_name().value();
  o.allowed_batch_sizes.assign(proto.allowed_batch_sizes().begin(),
                               proto.allowed_batch_sizes().end());
  TERN_CHECK_ARG(!proto.pad_variable_length_inputs(), source,
                 ": pad_variable_length_inputs is not supported by tern");
  validate_batching_options(o, source);
  return o;
}

BatchingOptions read_batching_parameters_file(const std::string& path) {
  return parse_batching_parameters(read_file(path, "batching parameters file"), path);
}

// --- monitoring config ---

MonitoringConfig parse_monitoring_config(const std::string& text, const std::string& source) {
  tensorflow::serving::MonitoringConfig proto;
  parse_text(text, source, &proto);
  MonitoringConfig m;
  m.prometheus_enable = proto.prometheus_config().enable();
  if (!proto.prometheus_config().path().empty())
    m.prometheus_path = proto.prometheus_config().path();
  TERN_CHECK_ARG(m.prometheus_path.front() == '/', source, ": prometheus_config path '",
                 m.prometheus_path, "' must start with '/'");
  return m;
}

MonitoringConfig read_monitoring_config_file(const std::string& path) {
  return parse_monitoring_config(read_file(path, "monitoring config file"), path);
}

}  // namespace tern::serve
