// PredictRequest -> PredictCall.
#include "tern/serve/predict_request.h"

#include <limits>

#include "tensorflow_serving/apis/predict.pb.h"
#include "tern/serve/signature.h"

namespace tern::serve {

ModelSpec model_spec_from_proto(const tensorflow::serving::ModelSpec& proto) {
  ModelSpec spec;
  spec.name = proto.name();
  if (proto.has_version()) spec.version = proto.version().value();
  if (proto.version_choice_case() == tensorflow::serving::ModelSpec::kVersionLabel) {
    spec.label = proto.version_label();
  }
  return spec;
}

PredictCall predict_call_from_proto(const tensorflow::serving::PredictRequest& request,
                                    int64_t max_tensor_bytes) {
  TERN_CHECK_ARG(request.has_model_spec(), "PredictRequest has no model_spec");
  PredictCall call;
  call.spec = model_spec_from_proto(request.model_spec());
  TERN_CHECK_ARG(!call.spec.name.empty(), "PredictRequest model_spec.name is empty");
  call.signature_name = request.model_spec().signature_name().empty()
                            ? std::string(kDefaultSignature)
                            : request.model_spec().signature_name();
  for (const auto& [alias, tensor] : request.inputs()) {
    call.inputs.emplace(alias, tensor_value_from_proto(tensor, alias, max_tensor_bytes));
  }
  call.output_filter.assign(request.output_filter().begin(), request.output_filter().end());
  return call;
}

PredictCall parse_predict_request(std::string_view bytes, int64_t max_tensor_bytes) {
  TERN_CHECK_ARG(bytes.size() <= static_cast<size_t>(std::numeric_limits<int>::max()),
                 "PredictRequest of ", bytes.size(), " bytes is too large to parse");
  tensorflow::serving::PredictRequest request;
  TERN_CHECK_ARG(request.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())),
                 "PredictRequest of ", bytes.size(), " bytes does not parse");
  return predict_call_from_proto(request, max_tensor_bytes);
}

}  // namespace tern::serve
