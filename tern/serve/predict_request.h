// A TF Serving PredictRequest (the generated message or its serialized bytes) decoded into plain
// tern values: the model spec, the signature name (defaulted), the inputs as TensorValues (by the
// rules of tensor_proto.h) and the output filter. Checks nothing against a signature: that needs
// the resolved version (grpc_server.cc). The gRPC server and the fuzz target share it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tern/serve/backend.h"
#include "tern/serve/tensor_proto.h"
#include "tern/serve/tensor_value.h"

namespace tensorflow::serving {
class ModelSpec;
class PredictRequest;
}  // namespace tensorflow::serving

namespace tern::serve {

struct PredictCall {
  ModelSpec spec;
  std::string signature_name;  // kDefaultSignature when the request names none
  TensorMap inputs;
  std::vector<std::string> output_filter;  // in request order, may hold duplicates
};

// name, version (the Int64Value wrapper) or version_label.
ModelSpec model_spec_from_proto(const tensorflow::serving::ModelSpec& proto);
// InvalidArgument for a request without model_spec or model name, and for any bad input tensor
// (naming its alias); `max_tensor_bytes` caps a broadcast input (tensor_proto.h).
PredictCall predict_call_from_proto(const tensorflow::serving::PredictRequest& request,
                                    int64_t max_tensor_bytes = kDefaultMaxTensorBytes);
// The same from serialized bytes; InvalidArgument when they do not parse as a PredictRequest.
PredictCall parse_predict_request(std::string_view bytes,
                                  int64_t max_tensor_bytes = kDefaultMaxTensorBytes);

}  // namespace tern::serve
