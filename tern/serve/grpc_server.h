// The gRPC front end: TF Serving's PredictionService (Predict, GetModelMetadata) and ModelService
// (GetModelStatus), wire-compatible with TF Serving's .proto files (tern/serve/proto/), over a
// ServingBackend. Method names: /tensorflow.serving.PredictionService/Predict,
// /tensorflow.serving.PredictionService/GetModelMetadata,
// /tensorflow.serving.ModelService/GetModelStatus; the other methods of those services answer
// UNIMPLEMENTED.
//
// Predict resolves the model spec once, checks the inputs against the signature (missing or extra
// alias, dtype, shape: INVALID_ARGUMENT naming the input; an unknown signature is
// FAILED_PRECONDITION as in TF Serving), honours output_filter, runs backend.predict with the
// deadline min(client deadline, now + timeout_ms) and answers with model_spec (name, version,
// signature_name) and the outputs as typed fields (tensor_proto.h). Every RPC is counted with
// backend.record_request (entrypoint "GRPC"; api "Predict", "GetModelMetadata", "GetModelStatus").
// tern::ErrorCode maps onto the gRPC status code of the same name.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "tern/serve/backend.h"

namespace tern::serve {

struct GrpcOptions {
  std::string host = "0.0.0.0";
  int port = 0;                          // 0 = pick a free one (port() says which)
  int64_t max_message_bytes = 64 << 20;  // both directions; larger is RESOURCE_EXHAUSTED
  int timeout_ms = 30000;                // per-request deadline cap; also bounds stop()'s wait
};

class GrpcServer {
 public:
  GrpcServer(ServingBackend& backend, GrpcOptions options);
  ~GrpcServer();  // stop()
  GrpcServer(const GrpcServer&) = delete;
  GrpcServer& operator=(const GrpcServer&) = delete;

  // Binds and starts serving; Unavailable naming host:port if it cannot bind.
  void start();
  // The bound port (after start()).
  int port() const;
  // Graceful: refuses new RPCs, lets in-flight ones finish for up to timeout_ms, cancels the
  // rest, then returns. Safe to call twice.
  void stop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tern::serve
