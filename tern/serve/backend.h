// What the front ends (REST in rest_server.h, gRPC in grpc_server.h) call: resolve a model spec
// to one loaded version (once per request), report version status, run a predict (through the
// batcher when batching is on), and record metrics. ServerCore (server_core.h) implements it over
// model directories on disk; tests may implement it over in-memory servables.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tern/base/error.h"
#include "tern/serve/servable.h"

namespace tern::serve {

using Clock = std::chrono::steady_clock;

// A request's model: no version and no label = the default (the latest available version, or a
// traffic split's pick); both set is an InvalidArgument.
struct ModelSpec {
  std::string name;
  std::optional<int64_t> version;
  std::optional<std::string> label;
};

// tensorflow.serving.ModelVersionStatus.State, with its numbers.
enum class VersionState : int {
  kUnknown = 0,
  kStart = 10,
  kLoading = 20,
  kAvailable = 30,
  kUnloading = 40,
  kEnd = 50,
};
std::string_view version_state_name(VersionState s);  // "AVAILABLE", ...

struct VersionStatus {
  int64_t version = 0;
  VersionState state = VersionState::kUnknown;
  std::optional<ErrorCode> error;  // set when the version failed to load (state kEnd)
  std::string error_message;
};

// One request's view of one version: holding it keeps the version loaded.
struct ServableHandle {
  std::string model_name;
  int64_t version = 0;
  ServablePtr servable;
};

// Where a request came in and what it asked, for metrics (TF Serving's label values).
struct RequestInfo {
  std::string model_name;  // "" when the request named no model
  int64_t version = -1;    // the resolved version, -1 when it did not resolve
  std::string api;         // "predict" / "classify" / "regress" (REST), "Predict" (gRPC), "" (GET)
  std::string entrypoint;  // "REST" or "GRPC"
};

class ServingBackend {
 public:
  virtual ~ServingBackend() = default;
  // NotFound: unknown model ("Servable not found for request: Latest(X)") or a version that is
  // not available; InvalidArgument: unknown label or both version and label.
  virtual ServableHandle resolve(const ModelSpec& spec) const = 0;
  // Every tracked version of spec.name (only the one named by version / label when set),
  // NotFound as resolve.
  virtual std::vector<VersionStatus> status(const ModelSpec& spec) const = 0;
  // Runs on the resolved version, through the batcher when batching is on. Unavailable when the
  // batch queue is full, DeadlineExceeded when `deadline` passes first.
  virtual TensorMap predict(const ServableHandle& handle, const std::string& signature,
                            const TensorMap& inputs, Clock::time_point deadline) = 0;
  // Counts one finished request: `code` nullopt = OK. Latency is recorded for OK requests only.
  virtual void record_request(const RequestInfo& info, std::optional<ErrorCode> code,
                              std::chrono::microseconds latency) = 0;
  // Prometheus text exposition of every metric (/monitoring/prometheus/metrics).
  virtual std::string prometheus_metrics() const = 0;
};

}  // namespace tern::serve
