// TensorFlow's TensorProto <-> TensorValue, as TF Serving's gRPC API carries tensors.
//
// Reading (request inputs) accepts what TensorFlow's Tensor::FromProto accepts, more strictly:
//   - tensor_content: raw little-endian elements, row-major; its size must be exactly
//     elements x element size (DT_STRING is not accepted there: strings go in string_val);
//   - or the typed field of the dtype: float_val (DT_FLOAT), double_val (DT_DOUBLE), int_val
//     (DT_INT32, DT_INT8, DT_UINT8; range-checked), int64_val, bool_val, half_val (DT_HALF,
//     DT_BFLOAT16: the 16 bits), string_val (DT_STRING). Exactly one value per element, or one
//     value for any shape (broadcast, as TF does). TF also pads 2..n-1 values with the last one and
//     zero-fills an empty field; tern refuses both (InvalidArgument naming the counts), as it
//     refuses a typed field of another dtype and tensor_content together with typed values.
//   - shapes: a missing tensor_shape is a scalar; unknown_rank, negative dims, more than 254 dims
//     and element counts that overflow are refused. Nothing is allocated beyond the bytes
//     present except a broadcast, which is capped at `max_bytes`.
//   - dtypes tern does not compute in (DT_INT16, DT_UINT32, DT_UINT64, complex, ...) are refused.
// Every error is InvalidArgument and names the input alias.
//
// Writing (response outputs) does what TF Serving's Predict does by default
// (predict_util.cc: PredictResponseTensorSerializationOption::kAsProtoField, Tensor::AsProtoField):
// dtype, tensor_shape and the typed field (float_val, double_val, int_val for int32/int8/uint8,
// int64_val, bool_val, half_val for half and bfloat16, string_val), never tensor_content.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "tern/serve/tensor_value.h"

namespace tensorflow {
class TensorProto;
class TensorShapeProto;
}  // namespace tensorflow

namespace tern::serve {

// The default cap on a tensor built by broadcasting one typed value.
inline constexpr int64_t kDefaultMaxTensorBytes = int64_t{64} << 20;
// TensorFlow's TensorShape::MaxDimensions().
inline constexpr int kMaxTensorRank = 254;

// `alias` names the tensor in errors ("input 'x': ...").
TensorValue tensor_value_from_proto(const tensorflow::TensorProto& proto, std::string_view alias,
                                    int64_t max_bytes = kDefaultMaxTensorBytes);
void tensor_value_to_proto(const TensorValue& value, tensorflow::TensorProto& proto);

// Dims of a known shape (unknown_rank, negative dims, too many dims: InvalidArgument naming
// `alias`).
std::vector<int64_t> shape_from_proto(const tensorflow::TensorShapeProto& proto,
                                      std::string_view alias);
// dims, with -1 kept (signature shapes), or unknown_rank.
void shape_to_proto(const std::vector<int64_t>& dims, bool unknown_rank,
                    tensorflow::TensorShapeProto& proto);

}  // namespace tern::serve
