// Prometheus text exposition of counters, gauges and histograms; the model server's series.
#include "tern/serve/metrics.h"

#include <charconv>
#include <cmath>
#include <cstdio>

#include "tern/serve/tf_status.h"

namespace tern::serve {
namespace {

bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

// Integers without a fraction, others in the shortest text that reads back the same double.
std::string format_number(double v) {
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  if (std::isnan(v)) return "NaN";
  if (v == std::floor(v) && std::fabs(v) < 1e15) return std::to_string(static_cast<int64_t>(v));
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), v);
  return std::string(buf, end);
}

std::string escape_label_value(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == '\\' || c == '"') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

std::vector<double> power_of_two_buckets(int count) {
  return exponential_buckets(1, 2, count);
}

}  // namespace

std::string prometheus_metric_name(std::string_view name) {
  std::string out(name);
  for (char& c : out) {
    if (!is_name_char(c)) c = ':';
  }
  return out;
}

std::string prometheus_label_name(std::string_view name) {
  std::string out(name);
  for (char& c : out) {
    if (!is_name_char(c)) c = '_';
  }
  return out;
}

std::vector<double> exponential_buckets(double scale, double growth, int count) {
  std::vector<double> bounds;
  for (int k = 0; k < count; ++k) {
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%.6g", scale * std::pow(growth, k));
    bounds.push_back(std::strtod(buf, nullptr));
  }
  return bounds;
}

// --- MetricFamily ---

MetricFamily::MetricFamily(Kind kind, std::string name, std::string help,
                           std::vector<std::string> labels, std::vector<double> bounds)
    : kind_(kind),
      name_(prometheus_metric_name(name)),
      help_(std::move(help)),
      labels_(std::move(labels)),
      bounds_(std::move(bounds)) {
  for (std::string& l : labels_) l = prometheus_label_name(l);
  for (size_t i = 1; i < bounds_.size(); ++i) {
    TERN_CHECK_ARG(bounds_[i] > bounds_[i - 1], "histogram ", name_,
                   ": bucket bounds must increase, bound ", i, " is ", bounds_[i]);
  }
}

MetricFamily::Series& MetricFamily::series(const std::vector<std::string>& label_values) {
  TERN_CHECK_ARG(label_values.size() == labels_.size(), "metric ", name_, " has ", labels_.size(),
                 " labels, got ", label_values.size(), " values");
  Series& s = series_[label_values];
  if (kind_ == Kind::kHistogram && s.counts.empty()) s.counts.assign(bounds_.size() + 1, 0);
  return s;
}

void MetricFamily::add(const std::vector<std::string>& label_values, double delta) {
  TERN_CHECK_ARG(kind_ != Kind::kHistogram, "metric ", name_, " is a histogram: use observe");
  TERN_CHECK_ARG(kind_ != Kind::kCounter || delta >= 0, "counter ", name_,
                 " cannot decrease (delta ", delta, ")");
  std::lock_guard<std::mutex> lock(mu_);
  series(label_values).value += delta;
}

void MetricFamily::set(const std::vector<std::string>& label_values, double value) {
  TERN_CHECK_ARG(kind_ == Kind::kGauge, "metric ", name_, " is not a gauge: set needs one");
  std::lock_guard<std::mutex> lock(mu_);
  series(label_values).value = value;
}

void MetricFamily::observe(const std::vector<std::string>& label_values, double value) {
  TERN_CHECK_ARG(kind_ == Kind::kHistogram, "metric ", name_, " is not a histogram");
  size_t bucket = 0;
  while (bucket < bounds_.size() && value > bounds_[bucket]) ++bucket;
  std::lock_guard<std::mutex> lock(mu_);
  Series& s = series(label_values);
  s.value += value;
  ++s.counts[bucket];
}

double MetricFamily::value(const std::vector<std::string>& label_values) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = series_.find(label_values);
  if (it == series_.end()) return 0;
  if (kind_ != Kind::kHistogram) return it->second.value;
  uint64_t n = 0;
  for (uint64_t c : it->second.counts) n += c;
  return static_cast<double>(n);
}

std::string MetricFamily::label_text(const std::vector<std::string>& values,
                                     const std::string& le) const {
  std::string out;
  for (size_t i = 0; i < labels_.size(); ++i) {
    out += (out.empty() ? "" : ",") + labels_[i] + "=\"" + escape_label_value(values[i]) + "\"";
  }
  if (!le.empty()) out += (out.empty() ? "" : ",") + std::string("le=\"") + le + "\"";
  return out.empty() ? out : "{" + out + "}";
}

void MetricFamily::write(std::string& out) const {
  static constexpr const char* kTypes[] = {"counter", "gauge", "histogram"};
  out += "# HELP " + name_ + " " + help_ + "\n";
  out += "# TYPE " + name_ + " " + kTypes[static_cast<int>(kind_)] + "\n";
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [values, s] : series_) {
    if (kind_ != Kind::kHistogram) {
      out += name_ + label_text(values, "") + " " + format_number(s.value) + "\n";
      continue;
    }
    uint64_t cumulative = 0;
    for (size_t b = 0; b < s.counts.size(); ++b) {
      cumulative += s.counts[b];
      const std::string le = b < bounds_.size() ? format_number(bounds_[b]) : "+Inf";
      out += name_ + "_bucket" + label_text(values, le) + " " + std::to_string(cumulative) + "\n";
    }
    out += name_ + "_sum" + label_text(values, "") + " " + format_number(s.value) + "\n";
    out += name_ + "_count" + label_text(values, "") + " " + std::to_string(cumulative) + "\n";
  }
}

// --- MetricsRegistry ---

MetricFamily& MetricsRegistry::add(std::unique_ptr<MetricFamily> family) {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& f : families_) {
    TERN_CHECK_ARG(f->name() != family->name(), "metric ", family->name(), " is registered twice");
  }
  families_.push_back(std::move(family));
  return *families_.back();
}

MetricFamily& MetricsRegistry::counter(std::string_view name, std::string help,
                                       std::vector<std::string> labels) {
  return add(std::make_unique<MetricFamily>(MetricFamily::Kind::kCounter, std::string(name),
                                            std::move(help), std::move(labels)));
}

MetricFamily& MetricsRegistry::gauge(std::string_view name, std::string help,
                                     std::vector<std::string> labels) {
  return add(std::make_unique<MetricFamily>(MetricFamily::Kind::kGauge, std::string(name),
                                            std::move(help), std::move(labels)));
}

MetricFamily& MetricsRegistry::histogram(std::string_view name, std::string help,
                                         std::vector<std::string> labels,
                                         std::vector<double> bounds) {
  return add(std::make_unique<MetricFamily>(MetricFamily::Kind::kHistogram, std::string(name),
                                            std::move(help), std::move(labels), std::move(bounds)));
}

std::string MetricsRegistry::prometheus_text() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::string out;
  for (const auto& f : families_) f->write(out);
  return out;
}

// --- ServingMetrics ---

ServingMetrics::ServingMetrics()
    : request_count(registry_.counter("/tensorflow/serving/request_count",
                                      "The total number of requests.", {"model_name", "status"})),
      request_latency(registry_.histogram(
          "/tensorflow/serving/request_latency",
          "Distribution of wall time (in microseconds) for successful requests.",
          {"model_name", "API", "entrypoint"}, exponential_buckets(10, 1.8, 33))),
      runtime_latency(registry_.histogram(
          "/tensorflow/serving/runtime_latency",
          "Distribution of wall time (in microseconds) spent running the model.",
          {"model_name", "API", "runtime"}, exponential_buckets(10, 1.8, 33))),
      queuing_latency(registry_.histogram(
          "/tensorflow/serving/batching_session/queuing_latency",
          "Distribution of wall time (in microseconds) a request waited for its batch.",
          {"thread_pool_name"}, exponential_buckets(10, 1.8, 33))),
      input_batch_size(registry_.histogram("/tensorflow/serving/batching/input_batch_size",
                                           "Rows per batch before padding.", {"model_name"},
                                           power_of_two_buckets(15))),
      processed_batch_size(registry_.histogram("/tensorflow/serving/batching/processed_batch_size",
                                               "Rows per batch as run (after padding).",
                                               {"model_name"}, power_of_two_buckets(15))),
      padding_size(registry_.histogram("/tensorflow/serving/batching/padding_size",
                                       "Padding rows per batch.", {"model_name"},
                                       power_of_two_buckets(15))),
      loaded_versions(registry_.gauge("/tern/serving/loaded_versions",
                                      "Versions of the model that are AVAILABLE.", {"model_name"})),
      version_request_count(registry_.counter("/tern/serving/version_request_count",
                                              "Requests by the version they resolved to.",
                                              {"model_name", "version", "status"})),
      version_request_latency(registry_.histogram(
          "/tern/serving/version_request_latency",
          "Distribution of wall time (in microseconds) for successful requests, by version.",
          {"model_name", "version"}, exponential_buckets(10, 1.8, 33))) {}

void ServingMetrics::record_request(const std::string& model_name, int64_t version,
                                    const std::string& api, const std::string& entrypoint,
                                    std::optional<ErrorCode> code,
                                    std::chrono::microseconds latency) {
  const std::string status(tf_error_code_name(code));
  const auto us = static_cast<double>(latency.count());
  request_count.add({model_name, status});
  if (!code) request_latency.observe({model_name, api, entrypoint}, us);
  if (version < 0) return;
  version_request_count.add({model_name, std::to_string(version), status});
  if (!code) version_request_latency.observe({model_name, std::to_string(version)}, us);
}

void ServingMetrics::record_runtime(const std::string& model_name, const std::string& api,
                                    std::chrono::microseconds latency) {
  runtime_latency.observe({model_name, api, "tern"}, static_cast<double>(latency.count()));
}

void ServingMetrics::record_batch(const std::string& model_name,
                                  const std::string& thread_pool_name, int64_t input_size,
                                  int64_t padded_size,
                                  const std::vector<std::chrono::microseconds>& queuing) {
  for (auto q : queuing)
    queuing_latency.observe({thread_pool_name}, static_cast<double>(q.count()));
  input_batch_size.observe({model_name}, static_cast<double>(input_size));
  processed_batch_size.observe({model_name}, static_cast<double>(padded_size));
  padding_size.observe({model_name}, static_cast<double>(padded_size - input_size));
}

void ServingMetrics::set_loaded_versions(const std::string& model_name, int64_t count) {
  loaded_versions.set({model_name}, static_cast<double>(count));
}

}  // namespace tern::serve
