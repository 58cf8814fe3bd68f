// Metrics in Prometheus' text exposition format (SERVING.md §4): counter, gauge and histogram
// families with labels in a MetricsRegistry, and ServingMetrics, the series the model server
// records under TF Serving's names (so existing dashboards work) plus tern's per-version series
// for A/B comparisons:
//
//   :tensorflow:serving:request_count{model_name,status}             counter, every request
//   :tensorflow:serving:request_latency{model_name,API,entrypoint}   histogram µs, OK requests only
//   :tensorflow:serving:runtime_latency{model_name,API,runtime}      histogram µs, the servable run
//   :tensorflow:serving:batching_session:queuing_latency{thread_pool_name}  histogram µs
//   :tensorflow:serving:batching:input_batch_size{model_name}       histogram, rows before padding
//   :tensorflow:serving:batching:processed_batch_size{model_name}   histogram, rows run
//   :tensorflow:serving:batching:padding_size{model_name}           histogram, padding rows
//   :tern:serving:loaded_versions{model_name}                       gauge, AVAILABLE versions
//   :tern:serving:version_request_count{model_name,version,status}  counter
//   :tern:serving:version_request_latency{model_name,version}       histogram µs, OK only
//
// Latency buckets are TF's 10·1.8^k µs (33 bounds); batch sizes use powers of two. Names follow
// TF's exporter: every character outside [a-zA-Z0-9_] of "/tensorflow/serving/x" becomes ':'.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tern/base/error.h"

namespace tern::serve {

// "/tensorflow/serving/request_count" -> ":tensorflow:serving:request_count".
std::string prometheus_metric_name(std::string_view name);
// A label name with every character outside [a-zA-Z0-9_] replaced by '_'.
std::string prometheus_label_name(std::string_view name);
// scale·growth^k for k < count, each rounded to 6 significant digits (10, 18, 32.4, ...).
std::vector<double> exponential_buckets(double scale, double growth, int count);

// One metric: a name, a help text, label names, and a series per label-value tuple.
class MetricFamily {
 public:
  enum class Kind { kCounter, kGauge, kHistogram };
  MetricFamily(Kind kind, std::string name, std::string help, std::vector<std::string> labels,
               std::vector<double> bounds = {});

  // Counter: adds `delta` (>= 0). Gauge: adds `delta` (any sign).
  void add(const std::vector<std::string>& label_values, double delta = 1);
  // Gauge only.
  void set(const std::vector<std::string>& label_values, double value);
  // Histogram only: counts `value` in the first bucket whose bound is >= value.
  void observe(const std::vector<std::string>& label_values, double value);

  // Counter / gauge value, or a histogram's count; 0 for a series never touched.
  double value(const std::vector<std::string>& label_values) const;
  // Appends "# HELP", "# TYPE" and one line per series (label values in order, series sorted).
  void write(std::string& out) const;
  const std::string& name() const { return name_; }

 private:
  struct Series {
    double value = 0;              // counter / gauge; histogram: the sum
    std::vector<uint64_t> counts;  // histogram: per bucket (not cumulative), then +Inf
  };
  Series& series(const std::vector<std::string>& label_values);  // under mu_
  std::string label_text(const std::vector<std::string>& values, const std::string& le) const;

  Kind kind_;
  std::string name_, help_;
  std::vector<std::string> labels_;
  std::vector<double> bounds_;
  mutable std::mutex mu_;
  std::map<std::vector<std::string>, Series> series_;
};

// Families by name, printed in registration order.
class MetricsRegistry {
 public:
  // `name` as TF writes it ("/tensorflow/serving/request_count") or already in Prometheus form;
  // InvalidArgument if a family of that name exists.
  MetricFamily& counter(std::string_view name, std::string help, std::vector<std::string> labels);
  MetricFamily& gauge(std::string_view name, std::string help, std::vector<std::string> labels);
  MetricFamily& histogram(std::string_view name, std::string help, std::vector<std::string> labels,
                          std::vector<double> bounds);
  std::string prometheus_text() const;

 private:
  MetricFamily& add(std::unique_ptr<MetricFamily> family);
  mutable std::mutex mu_;
  std::vector<std::unique_ptr<MetricFamily>> families_;
};

// The model server's series (see the table above).
class ServingMetrics {
  MetricsRegistry registry_;  // declared first: the family references below point into it

 public:
  ServingMetrics();

  // One finished request. `version` < 0: it did not resolve (no per-version series).
  void record_request(const std::string& model_name, int64_t version, const std::string& api,
                      const std::string& entrypoint, std::optional<ErrorCode> code,
                      std::chrono::microseconds latency);
  void record_runtime(const std::string& model_name, const std::string& api,
                      std::chrono::microseconds latency);
  void record_batch(const std::string& model_name, const std::string& thread_pool_name,
                    int64_t input_size, int64_t padded_size,
                    const std::vector<std::chrono::microseconds>& queuing);
  void set_loaded_versions(const std::string& model_name, int64_t count);

  std::string prometheus_text() const { return registry_.prometheus_text(); }
  const MetricsRegistry& registry() const { return registry_; }

  MetricFamily& request_count;
  MetricFamily& request_latency;
  MetricFamily& runtime_latency;
  MetricFamily& queuing_latency;
  MetricFamily& input_batch_size;
  MetricFamily& processed_batch_size;
  MetricFamily& padding_size;
  MetricFamily& loaded_versions;
  MetricFamily& version_request_count;
  MetricFamily& version_request_latency;
};

}  // namespace tern::serve
