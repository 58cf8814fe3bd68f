// `tern serve`: TensorFlow Serving's model server for exported tern models. Flags are named like
// tensorflow_model_server's; REST (TF Serving's REST API) and gRPC (PredictionService,
// ModelService) over one ServerCore (versions, labels, batching, metrics). SIGTERM or SIGINT
// drains in-flight requests and exits 0.
#include <signal.h>
#include <CLI/CLI.hpp>

#include <iostream>
#include <memory>
#include <optional>
#include <utility>

#include "tern/base/logging.h"
#include "tern/base/thread_pool.h"
#include "tern/runtime/runtime.h"
#include "tern/serve/grpc_server.h"
#include "tern/serve/model_config.h"
#include "tern/serve/model_dir.h"
#include "tern/serve/rest_server.h"
#include "tern/serve/server_core.h"
#include "tools/tern/cli_parse.h"
#include "tools/tern/commands.h"

namespace tern::tools {

int cmd_serve(int argc, char** argv) {
  CLI::App app{"Serve exported models over TensorFlow Serving's REST and gRPC APIs.", "tern serve"};
  init_app(app);
  serve::ServerCoreOptions core;
  serve::RestOptions rest;
  serve::GrpcOptions grpc;
  int rest_port = 0, grpc_port = 8500, threads = 1;
  std::string monitoring_config_file;
  bool enable_cors = false;
  app.add_option("--model_name", core.model_name, "name of the model (single-model mode)");
  app.add_option("--model_base_path", core.model_base_path,
                 "folder holding the model's numeric version folders (single-model mode)");
  app.add_option("--model_config_file", core.model_config_file,
                 "ModelServerConfig text proto (model_config_list); overrides the two above");
  app.add_option("--model_config_file_poll_wait_seconds", core.model_config_file_poll_wait_seconds,
                 "re-read --model_config_file this often when it changed (0 = read once)");
  app.add_option("--file_system_poll_wait_seconds", core.file_system_poll_wait_seconds,
                 "poll the base paths for new versions this often (0 = once, < 0 = never)");
  app.add_option("--port", grpc_port, "gRPC port (0 = no gRPC)");
  app.add_option("--rest_api_port", rest_port, "REST port (0 = no REST)");
  app.add_option("--rest_api_host,--host", rest.host, "address to bind (REST and gRPC)");
  app.add_option("--rest_api_num_threads", rest.num_threads,
                 "REST worker threads (0 = one per allowed connection)");
  app.add_option("--rest_api_timeout_in_ms", rest.timeout_ms, "per-request deadline (504 after)");
  app.add_option("--rest_api_max_body_bytes", rest.max_body_bytes, "largest request body (413)");
  app.add_option("--rest_api_max_connections", rest.max_connections, "open REST connections");
  app.add_flag("--rest_api_enable_cors_support", enable_cors, "answer CORS preflights");
  app.add_flag("--enable_batching", core.enable_batching, "batch requests together");
  app.add_option("--batching_parameters_file", core.batching_parameters_file,
                 "BatchingParameters text proto (max_batch_size, batch_timeout_micros, ...)");
  app.add_option("--monitoring_config_file", monitoring_config_file,
                 "MonitoringConfig text proto (prometheus_config { enable: true })");
  // One intra-op thread per model run by default: requests (and batches) run side by side on the
  // REST / batch threads. With more, every request's OpenMP team competes with the other requests
  // for the cores (on 2 cores, one-row requests went from 165 us to 1 ms p50).
  app.add_option("--tensorflow_intra_op_parallelism,--threads", threads,
                 "intra-op threads per model run (default 1; 0 = all cores)");
  if (int rc = parse(app, argc, argv); rc >= 0) return rc;
  if (rest_port <= 0 && grpc_port <= 0)
    usage_error("both --port and --rest_api_port are 0: nothing to serve on");
  if (rest_port == grpc_port) usage_error("--port and --rest_api_port are both ", rest_port);
  for (auto [flag, n] : {std::pair<const char*, int64_t>{"--threads", threads},
                         {"--rest_api_num_threads", rest.num_threads}}) {
    std::string why = thread_count_problem(n, /*zero_ok=*/true);
    if (!why.empty()) usage_error(flag, " ", why);
  }
  runtime::set_intra_op_threads(threads);

  if (!monitoring_config_file.empty()) {
    serve::MonitoringConfig monitoring = serve::read_monitoring_config_file(monitoring_config_file);
    // TF Serving serves the metrics on the REST port.
    TERN_CHECK_ARG(!monitoring.prometheus_enable || rest_port > 0,
                   "serve: ", monitoring_config_file,
                   " enables Prometheus metrics, which are served on the REST port, but "
                   "--rest_api_port is 0");
    if (monitoring.prometheus_enable) rest.metrics_path = monitoring.prometheus_path;
  }

  // SIGTERM / SIGINT are taken by sigwait below: block them before any thread starts (threads
  // inherit the mask), and give the caller its mask back however this returns.
  sigset_t stop_signals, caller_mask;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, &caller_mask);
  struct RestoreMask {
    sigset_t mask;
    ~RestoreMask() { pthread_sigmask(SIG_SETMASK, &mask, nullptr); }
  } restore{caller_mask};
  rest.enable_cors = enable_cors;
  core.loader = [](const std::string& dir) { return serve::load_servable(dir); };
  serve::ServerCore server_core(std::move(core));
  std::optional<serve::GrpcServer> grpc_server;
  std::optional<serve::RestServer> rest_server;
  if (grpc_port > 0) {
    grpc.host = rest.host;
    grpc.port = grpc_port;
    grpc_server.emplace(server_core, grpc);
    grpc_server->start();
    std::cout << "Running gRPC ModelServer at " << grpc.host << ":" << grpc_server->port() << " ..."
              << std::endl;
  }
  if (rest_port > 0) {
    rest.port = rest_port;
    rest_server.emplace(server_core, rest);
    rest_server->start();
    std::cout << "Exporting HTTP/REST API at:" << rest.host << ":" << rest_server->port() << " ..."
              << std::endl;
  }
  int sig = 0;
  sigwait(&stop_signals, &sig);
  std::cout << "tern serve: " << (sig == SIGTERM ? "SIGTERM" : "SIGINT")
            << ": draining in-flight requests" << std::endl;
  if (rest_server) rest_server->stop();
  if (grpc_server) grpc_server->stop();
  server_core.stop();
  std::cout << "tern serve: stopped" << std::endl;
  return 0;
}

}  // namespace tern::tools
