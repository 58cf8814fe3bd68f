// TF Serving's REST predict codec (SERVING.md sections 1.2 and 1.3): a JSON request body read
// into a TensorMap by the signature's input dtypes, and outputs written as "predictions" (row
// format, for "instances" requests) or "outputs" (columnar, for "inputs" requests).
//
// Reading follows TF Serving's json_tensor.cc rules and messages: the dtype decides how a value
// is read (int dtypes reject 1.0, floats take any number and narrow silently, bool takes only
// true/false, DT_STRING takes a string or {"b64": ...}); ragged lists are rejected; a shape is
// never allocated before the values that fill it were counted, so a body cannot ask for more
// memory than its own size implies. Unknown top-level keys are ignored.
//
// Does not: decompress bodies (rest_server.cc does), run anything (the backend does).
#pragma once

#include <string>
#include <string_view>

#include "tern/serve/json_value.h"
#include "tern/serve/signature.h"
#include "tern/serve/tensor_value.h"

namespace tern::serve {

enum class JsonFormat { kRow, kColumnar };  // "instances" / "inputs"

struct JsonPredictRequest {
  std::string signature_name;  // kDefaultSignature when the body names none
  JsonFormat format = JsonFormat::kRow;
  TensorMap inputs;  // by the signature's input aliases
};

// Parses the body, checks the root is an object, reads "signature_name" (InvalidArgument "...
// 'signature_name' key must be a string value." when it is not a string).
JsonDocument parse_json_body(std::string_view body);
std::string json_signature_name(const JsonDocument& doc);

// Reads "instances" or "inputs" of a parsed body against `signature`'s inputs. InvalidArgument
// with TF Serving's message on any mismatch; Unimplemented for an input dtype JSON cannot carry.
JsonPredictRequest json_predict_inputs(const JsonDocument& doc, const Signature& signature);

// Both steps; an unknown signature is InvalidArgument
// `Serving signature name: "x" not found in signature def`.
JsonPredictRequest parse_predict_request(std::string_view body, const SignatureMap& signatures);

// The response body: {"predictions": [...]} for kRow, {"outputs": ...} for kColumnar. DT_STRING
// outputs whose alias ends with "_bytes" are written as {"b64": ...}. InvalidArgument for an
// empty map, and in row format for a rank-0 output ("has no shape information") or outputs whose
// dim 0 differ ("has inconsistent batch size").
std::string predict_response_json(const TensorMap& outputs, JsonFormat format);

// {"error": "<message>"}
std::string error_json(std::string_view message);

// Writes `value` (whole tensor from dim `dim` on, starting at flat element `*offset`) to `w`.
class JsonWriter;
void write_tensor_json(JsonWriter& w, const TensorValue& value, bool as_bytes, size_t dim,
                       int64_t* offset);

}  // namespace tern::serve
