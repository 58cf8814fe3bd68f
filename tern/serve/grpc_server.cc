// The gRPC front end (see grpc_server.h): the two services over a ServingBackend, and the server's
// lifecycle.
#include "tern/serve/grpc_server.h"

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <mutex>
#include <new>
#include <set>

#include "tensorflow_serving/apis/model_service.grpc.pb.h"
#include "tensorflow_serving/apis/prediction_service.grpc.pb.h"
#include "tern/serve/predict_request.h"
#include "tern/serve/tensor_proto.h"

namespace tern::serve {
namespace {

namespace tfs = tensorflow::serving;

constexpr const char* kSignatureDefField = "signature_def";

// --- errors ---

grpc::StatusCode grpc_code_of(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidArgument:
      return grpc::StatusCode::INVALID_ARGUMENT;
    case ErrorCode::kNotFound:
      return grpc::StatusCode::NOT_FOUND;
    case ErrorCode::kOutOfRange:
      return grpc::StatusCode::OUT_OF_RANGE;
    case ErrorCode::kDataLoss:
      return grpc::StatusCode::DATA_LOSS;
    case ErrorCode::kResourceExhausted:
      return grpc::StatusCode::RESOURCE_EXHAUSTED;
    case ErrorCode::kFailedPrecondition:
      return grpc::StatusCode::FAILED_PRECONDITION;
    case ErrorCode::kUnavailable:
      return grpc::StatusCode::UNAVAILABLE;
    case ErrorCode::kInternal:
      return grpc::StatusCode::INTERNAL;
    case ErrorCode::kDeadlineExceeded:
      return grpc::StatusCode::DEADLINE_EXCEEDED;
    case ErrorCode::kUnimplemented:
      return grpc::StatusCode::UNIMPLEMENTED;
    case ErrorCode::kCancelled:
      return grpc::StatusCode::CANCELLED;
  }
  return grpc::StatusCode::UNKNOWN;
}

// Runs one RPC's body, turns what it throws into a gRPC status and counts the request.
template <typename Body>
grpc::Status run_rpc(ServingBackend& backend, RequestInfo& info, Body body) {
  const auto start = Clock::now();
  std::optional<ErrorCode> code;
  grpc::Status status = grpc::Status::OK;
  try {
    body();
  } catch (const Error& e) {
    code = e.code();
    status = grpc::Status(grpc_code_of(e.code()), e.message());
  } catch (const std::bad_alloc&) {
    code = ErrorCode::kResourceExhausted;
    status = grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED, "out of memory");
  } catch (const std::exception& e) {
    code = ErrorCode::kInternal;
    status = grpc::Status(grpc::StatusCode::INTERNAL, e.what());
  }
  backend.record_request(
      info, code, std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - start));
  return status;
}

// --- Predict ---

std::string join_keys(const std::map<std::string, TensorSpec>& m) {
  std::string s;
  for (const auto& [k, v] : m) s += (s.empty() ? "" : ",") + k;
  return s;
}

std::string dims_string(const std::vector<int64_t>& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? "," : "") + std::to_string(dims[i]);
  return s + "]";
}

bool shape_fits(const TensorSpec& spec, const std::vector<int64_t>& dims) {
  if (spec.unknown_rank) return true;
  if (spec.shape.size() != dims.size()) return false;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (spec.shape[i] >= 0 && spec.shape[i] != dims[i]) return false;
  }
  return true;
}

// Every input of the signature, nothing else, each of its dtype and shape.
void check_inputs(const Signature& sig, const std::string& sig_name, const TensorMap& inputs) {
  for (const auto& [alias, value] : inputs) {
    const auto it = sig.inputs.find(alias);
    TERN_CHECK_ARG(it != sig.inputs.end(), "input '", alias, "' is not an input of signature '",
                   sig_name, "' (its inputs: {", join_keys(sig.inputs), "})");
    const TensorSpec& spec = it->second;
    TERN_CHECK_ARG(value.dtype == spec.dtype, "input '", alias, "' is ",
                   wire_dtype_name(value.dtype), " but signature '", sig_name, "' expects ",
                   wire_dtype_name(spec.dtype));
    TERN_CHECK_ARG(shape_fits(spec, value.shape), "input '", alias, "' has shape ",
                   dims_string(value.shape), " but signature '", sig_name, "' expects ",
                   dims_string(spec.shape));
  }
  for (const auto& [alias, spec] : sig.inputs) {
    TERN_CHECK_ARG(inputs.count(alias) == 1, "input '", alias, "' of signature '", sig_name,
                   "' is missing");
  }
}

// The outputs to return, in order: output_filter (each an output of the signature, no
// duplicates), or every output when it is empty.
std::vector<std::string> outputs_to_return(const Signature& sig, const std::string& sig_name,
                                           const std::vector<std::string>& filter) {
  std::vector<std::string> names;
  std::set<std::string> seen;
  for (const std::string& alias : filter) {
    TERN_CHECK_ARG(sig.outputs.count(alias) == 1, "output_filter names '", alias,
                   "', not an output of signature '", sig_name, "' (its outputs: {",
                   join_keys(sig.outputs), "})");
    TERN_CHECK_ARG(seen.insert(alias).second, "output_filter names '", alias, "' twice");
    names.push_back(alias);
  }
  if (names.empty()) {
    for (const auto& [alias, spec] : sig.outputs) names.push_back(alias);
  }
  return names;
}

// min(the client's deadline, now + timeout_ms).
Clock::time_point request_deadline(const grpc::ServerContext& context, int timeout_ms) {
  const auto client_left = std::chrono::duration_cast<std::chrono::nanoseconds>(
      context.deadline() - std::chrono::system_clock::now());
  return Clock::now() +
         std::min<std::chrono::nanoseconds>(client_left, std::chrono::milliseconds(timeout_ms));
}

const Signature& find_signature(const ServableHandle& handle, const std::string& name) {
  const SignatureMap& sigs = handle.servable->signatures();
  const auto it = sigs.find(name);
  if (it == sigs.end()) {
    throw_error(ErrorCode::kFailedPrecondition, "Serving signature key \"", name,
                "\" not found (model ", handle.model_name, " version ", handle.version, ")");
  }
  return it->second;
}

void fill_model_spec(const ServableHandle& handle, const std::string& signature_name,
                     tfs::ModelSpec& spec) {
  spec.set_name(handle.model_name);
  spec.mutable_version()->set_value(handle.version);
  if (!signature_name.empty()) spec.set_signature_name(signature_name);
}

// --- metadata ---

void signature_to_proto(const Signature& sig, tensorflow::SignatureDef& out) {
  out.set_method_name(sig.method_name);
  auto fill = [](const std::map<std::string, TensorSpec>& specs,
                 google::protobuf::Map<std::string, tensorflow::TensorInfo>& infos) {
    for (const auto& [alias, spec] : specs) {
      tensorflow::TensorInfo& info = infos[alias];
      info.set_name(spec.name);
      info.set_dtype(static_cast<tensorflow::DataType>(spec.dtype));
      shape_to_proto(spec.shape, spec.unknown_rank, *info.mutable_tensor_shape());
    }
  };
  fill(sig.inputs, *out.mutable_inputs());
  fill(sig.outputs, *out.mutable_outputs());
}

// --- the services ---

class PredictionServiceImpl final : public tfs::PredictionService::Service {
 public:
  PredictionServiceImpl(ServingBackend& backend, const GrpcOptions& options)
      : backend_(backend), options_(options) {}

  grpc::Status Predict(grpc::ServerContext* context, const tfs::PredictRequest* request,
                       tfs::PredictResponse* response) override {
    RequestInfo info{
        .model_name = request->model_spec().name(), .api = "Predict", .entrypoint = "GRPC"};
    return run_rpc(backend_, info, [&] {
      const PredictCall call = predict_call_from_proto(*request, options_.max_message_bytes);
      const ServableHandle handle = backend_.resolve(call.spec);
      info.version = handle.version;
      const Signature& sig = find_signature(handle, call.signature_name);
      check_inputs(sig, call.signature_name, call.inputs);
      const std::vector<std::string> names =
          outputs_to_return(sig, call.signature_name, call.output_filter);
      const TensorMap outputs = backend_.predict(handle, call.signature_name, call.inputs,
                                                 request_deadline(*context, options_.timeout_ms));
      fill_model_spec(handle, call.signature_name, *response->mutable_model_spec());
      auto& out = *response->mutable_outputs();
      for (const std::string& alias : names) {
        const auto it = outputs.find(alias);
        TERN_CHECK(it != outputs.end(), "signature '", call.signature_name, "' of model ",
                   handle.model_name, " returned no output '", alias, "'");
        tensor_value_to_proto(it->second, out[alias]);
      }
    });
  }

  grpc::Status GetModelMetadata(grpc::ServerContext*, const tfs::GetModelMetadataRequest* request,
                                tfs::GetModelMetadataResponse* response) override {
    RequestInfo info{.model_name = request->model_spec().name(),
                     .api = "GetModelMetadata",
                     .entrypoint = "GRPC"};
    return run_rpc(backend_, info, [&] {
      TERN_CHECK_ARG(request->has_model_spec(), "GetModelMetadataRequest has no model_spec");
      TERN_CHECK_ARG(request->metadata_field_size() > 0,
                     "GetModelMetadataRequest must specify at least one metadata_field");
      for (const std::string& field : request->metadata_field()) {
        TERN_CHECK_ARG(field == kSignatureDefField, "Metadata field ", field,
                       " is not supported (only \"", kSignatureDefField, "\")");
      }
      const ServableHandle handle = backend_.resolve(model_spec_from_proto(request->model_spec()));
      info.version = handle.version;
      tfs::SignatureDefMap defs;
      for (const auto& [name, sig] : handle.servable->signatures()) {
        signature_to_proto(sig, (*defs.mutable_signature_def())[name]);
      }
      fill_model_spec(handle, "", *response->mutable_model_spec());
      (*response->mutable_metadata())[kSignatureDefField].PackFrom(defs);
    });
  }

 private:
  ServingBackend& backend_;
  const GrpcOptions& options_;
};

class ModelServiceImpl final : public tfs::ModelService::Service {
 public:
  explicit ModelServiceImpl(ServingBackend& backend) : backend_(backend) {}

  grpc::Status GetModelStatus(grpc::ServerContext*, const tfs::GetModelStatusRequest* request,
                              tfs::GetModelStatusResponse* response) override {
    RequestInfo info{
        .model_name = request->model_spec().name(), .api = "GetModelStatus", .entrypoint = "GRPC"};
    return run_rpc(backend_, info, [&] {
      TERN_CHECK_ARG(request->has_model_spec(), "GetModelStatusRequest has no model_spec");
      const ModelSpec spec = model_spec_from_proto(request->model_spec());
      TERN_CHECK_ARG(!spec.name.empty(), "Missing model name in request.");
      if (spec.version) info.version = *spec.version;
      for (const VersionStatus& v : backend_.status(spec)) {
        tfs::ModelVersionStatus& out = *response->add_model_version_status();
        out.set_version(v.version);
        out.set_state(static_cast<tfs::ModelVersionStatus::State>(v.state));
        // tensorflow.error.Code has the gRPC status numbers.
        const int code = v.error ? static_cast<int>(grpc_code_of(*v.error)) : 0;
        out.mutable_status()->set_error_code(static_cast<tensorflow::error::Code>(code));
        out.mutable_status()->set_error_message(v.error ? v.error_message : "");
      }
    });
  }

 private:
  ServingBackend& backend_;
};

}  // namespace

// --- lifecycle ---

struct GrpcServer::Impl {
  Impl(ServingBackend& backend, GrpcOptions opts)
      : options(std::move(opts)), prediction(backend, options), model(backend) {}

  GrpcOptions options;
  PredictionServiceImpl prediction;
  ModelServiceImpl model;
  std::mutex mu;
  std::unique_ptr<grpc::Server> server;
  int port = 0;
};

GrpcServer::GrpcServer(ServingBackend& backend, GrpcOptions options) {
  TERN_CHECK_ARG(options.port >= 0 && options.port <= 65535, "gRPC port ", options.port,
                 " is not in 0..65535");
  TERN_CHECK_ARG(options.max_message_bytes > 0, "gRPC max_message_bytes ",
                 options.max_message_bytes, " must be positive");
  TERN_CHECK_ARG(options.timeout_ms > 0, "gRPC timeout_ms ", options.timeout_ms,
                 " must be positive");
  impl_ = std::make_unique<Impl>(backend, std::move(options));
}

GrpcServer::~GrpcServer() {
  stop();
}

void GrpcServer::start() {
  std::lock_guard<std::mutex> lock(impl_->mu);
  TERN_CHECK(impl_->server == nullptr, "GrpcServer::start called twice");
  const GrpcOptions& o = impl_->options;
  const bool ipv6 = o.host.find(':') != std::string::npos;
  const std::string address = (ipv6 ? "[" + o.host + "]" : o.host) + ":" + std::to_string(o.port);
  const int max_bytes = static_cast<int>(std::min<int64_t>(o.max_message_bytes, INT_MAX));

  grpc::ServerBuilder builder;
  int bound_port = 0;
  builder.AddListeningPort(address, grpc::InsecureServerCredentials(), &bound_port);
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);  // a port in use is an error
  builder.SetMaxReceiveMessageSize(max_bytes);
  builder.SetMaxSendMessageSize(max_bytes);
  builder.RegisterService(&impl_->prediction);
  builder.RegisterService(&impl_->model);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr || bound_port == 0) {
    if (server) server->Shutdown();
    throw_error(ErrorCode::kUnavailable, "gRPC server cannot bind ", address,
                " (address in use or not local)");
  }
  impl_->server = std::move(server);
  impl_->port = bound_port;
}

int GrpcServer::port() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->port;
}

void GrpcServer::stop() {
  std::lock_guard<std::mutex> lock(impl_->mu);
  if (impl_->server == nullptr) return;
  impl_->server->Shutdown(std::chrono::system_clock::now() +
                          std::chrono::milliseconds(impl_->options.timeout_ms));
  impl_->server->Wait();
  impl_->server.reset();
}

}  // namespace tern::serve
