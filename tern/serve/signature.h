// Signatures, as a SavedModel's SignatureDef: the aliases clients use for inputs and outputs,
// their dtypes and shapes (-1 = any size, dim 0 is the batch), and the method. The metadata
// endpoints print them; requests are parsed by them (the input's dtype decides how a JSON value
// or TensorProto is read, never the value itself).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "tern/serve/tensor_value.h"

namespace tern::serve {

inline constexpr const char* kDefaultSignature = "serving_default";
inline constexpr const char* kPredictMethod = "tensorflow/serving/predict";
inline constexpr const char* kClassifyMethod = "tensorflow/serving/classify";
inline constexpr const char* kRegressMethod = "tensorflow/serving/regress";

struct TensorSpec {
  WireDType dtype = WireDType::kInvalid;
  std::vector<int64_t> shape;  // -1 for an unknown size; dim 0 is the batch (-1)
  bool unknown_rank = false;
  std::string name;  // the graph tensor, e.g. "x:0" (metadata only)
  // An input whose values may be missing (a transform's raw features): over REST, JSON null, or
  // the input's key left out of an `instances` object or the `inputs` object, is a missing value:
  // NaN for DT_FLOAT / DT_DOUBLE, "" for DT_STRING (docs/serving_json.md). Not in TF Serving.
  bool nullable = false;
  bool operator==(const TensorSpec&) const = default;
};

struct Signature {
  std::string method_name = kPredictMethod;
  std::map<std::string, TensorSpec> inputs;   // alias -> spec
  std::map<std::string, TensorSpec> outputs;  // alias -> spec
  bool operator==(const Signature&) const = default;
};

using SignatureMap = std::map<std::string, Signature>;

}  // namespace tern::serve
