// The REST front end of `tern serve`: TF Serving's HTTP API (SERVING.md section 1) over a
// ServingBackend, on cpp-httplib.
//
//   GET  /v1/models/{name}[/versions/{v}|/labels/{l}]            model status
//   GET  /v1/models/{name}[/versions/{v}|/labels/{l}]/metadata   signatures
//   POST /v1/models/{name}[/versions/{v}|/labels/{l}]:predict|classify|regress
//   GET  <metrics_path>                                          Prometheus text (when set)
//
// Routing follows TF Serving's three regexes (case-insensitive match, then a case-sensitive
// method; name and label URL-decoded; version+label, a wrong verb or no model name -> 400).
// Every /v1 response is application/json, errors {"error": "..."} with TF Serving's status codes
// (tf_status.h); a body over max_body_bytes (after gzip decompression, which stops there) is 413
// and is never held in memory whole. Each request resolves its version once and parses and runs
// on that handle; every request is recorded with backend.record_request.
//
// Connections are bounded: num_threads workers serve at most max_connections accepted
// connections; beyond that the accept loop waits for a slot (the kernel's backlog holds the rest).
// cpp-httplib gives each connection a worker for its life (kept alive between requests), so by
// default there is one worker per allowed connection: fewer would leave a new client (a status
// probe, say) waiting until some kept-alive connection closes.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <thread>

#include "tern/serve/backend.h"

namespace httplib {
class Server;
}

namespace tern::serve {

struct RestOptions {
  std::string host = "0.0.0.0";
  int port = 0;                       // 0 = pick a free port (tests)
  int num_threads = 0;                // 0 = max_connections (one worker per connection)
  int64_t max_body_bytes = 64 << 20;  // larger bodies: 413 {"error": ...}, not read into memory
  int timeout_ms = 30000;             // per-request deadline -> 504 (DeadlineExceeded)
  int max_connections = 256;          // bounded: never unbounded threads
  bool enable_cors = false;
  std::string metrics_path;  // "" = no metrics endpoint; else e.g. "/monitoring/prometheus/metrics"
};

class RestServer {
 public:
  RestServer(ServingBackend& backend, RestOptions options);
  ~RestServer();  // stops
  RestServer(const RestServer&) = delete;
  RestServer& operator=(const RestServer&) = delete;

  // Binds and serves on background threads; Unavailable naming host:port if the bind fails.
  void start();
  int port() const { return port_; }  // the bound port
  // Stop accepting; in-flight requests finish; returns when drained.
  void stop();

 private:
  ServingBackend& backend_;
  RestOptions options_;
  std::unique_ptr<httplib::Server> server_;
  std::thread listener_;
  int port_ = 0;
};

}  // namespace tern::serve
