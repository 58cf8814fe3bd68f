// TF Serving's REST classify / regress codec (SERVING.md section 1.4): a body of "examples" (and
// an optional "context" merged into each) becomes serialized tf.Example strings, fed as the
// DT_STRING input "inputs" of a classify / regress signature; its outputs become {"results": ...}.
//
// Feature kinds are inferred per JSON value as TF Serving does: a number with a decimal point or
// an exponent -> float_list, an integer -> int64_list (a uint64 beyond int64 is rejected),
// true / false -> int64_list 1 / 0, a string or {"b64": ...} -> bytes_list; null, nested lists
// and mixed kinds in one feature are rejected.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "tern/serve/json_value.h"
#include "tern/serve/signature.h"
#include "tern/serve/tensor_value.h"

namespace tern::serve {

inline constexpr const char* kExamplesInput = "inputs";  // the input classify / regress feed
inline constexpr const char* kClassesOutput = "classes";
inline constexpr const char* kScoresOutput = "scores";
inline constexpr const char* kRegressOutput = "outputs";

// The serialized tf.Examples of a parsed body (context features first, each example's own
// features replacing a context feature of the same name), in request order.
std::vector<std::string> json_examples(const JsonDocument& doc);

// {"inputs": DT_STRING [n]} from serialized examples.
TensorMap examples_tensor_map(std::vector<std::string> serialized);

// InvalidArgument naming the signature when it is not a classify (regress) signature with the one
// DT_STRING input "inputs".
void check_classify_signature(const std::string& name, const Signature& sig);
void check_regress_signature(const std::string& name, const Signature& sig);

// {"results": [[["label", score], ...], ...]} from "classes" (DT_STRING [batch, k], optional:
// labels "") and "scores" (DT_FLOAT [batch, k], optional: scores 0); InvalidArgument when neither
// is there or their types / shapes are wrong.
std::string classify_response_json(const TensorMap& outputs, int64_t batch);
// {"results": [v0, v1, ...]} from "outputs" (DT_FLOAT [batch] or [batch, 1]).
std::string regress_response_json(const TensorMap& outputs, int64_t batch);

}  // namespace tern::serve
