// Tensors as TensorFlow Serving's APIs carry them: TensorFlow's DataType numbers and names
// (tensorflow/core/framework/types.proto: DT_FLOAT = 1, ...), numbers in a host tern::Tensor,
// DT_STRING as byte strings. The REST JSON codec, the gRPC TensorProto codec and servables all
// speak TensorValue; a servable turns it into graph inputs.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tern/tensor/tensor.h"

namespace tern::serve {

// TensorFlow's DataType enum values (the gRPC wire numbers).
enum class WireDType : int {
  kInvalid = 0,
  kFloat = 1,
  kDouble = 2,
  kInt32 = 3,
  kUInt8 = 4,
  kInt16 = 5,
  kInt8 = 6,
  kString = 7,
  kInt64 = 9,
  kBool = 10,
  kBFloat16 = 14,
  kHalf = 19,
  kUInt32 = 22,
  kUInt64 = 23,
};

// "DT_FLOAT", ...; "DT_INVALID" for kInvalid.
std::string_view wire_dtype_name(WireDType d);
// By name ("DT_FLOAT"); nullopt for a name not in the enum above.
std::optional<WireDType> parse_wire_dtype(std::string_view name);
// By number; nullopt for a number not in the enum above.
std::optional<WireDType> wire_dtype_from_number(int number);
// tern dtype -> wire dtype (every tern dtype has one).
WireDType wire_dtype_of(DType d);
// wire dtype -> tern dtype; nullopt for DT_STRING and the types tern does not compute in
// (int16, uint32, uint64).
std::optional<DType> tern_dtype_of(WireDType d);

// One request or response tensor. `shape` is always set; numbers live in `numbers` (a host
// tensor of tern_dtype_of(dtype) and this shape), strings in `strings` (row-major,
// product(shape) of them). Which one is used follows `dtype`.
struct TensorValue {
  WireDType dtype = WireDType::kInvalid;
  std::vector<int64_t> shape;
  Tensor numbers;
  std::vector<std::string> strings;

  static TensorValue from_tensor(Tensor t);  // numbers; dtype and shape from the tensor
  static TensorValue from_strings(std::vector<int64_t> shape, std::vector<std::string> strings);
  bool is_string() const { return dtype == WireDType::kString; }
  int64_t num_elements() const;     // product of shape (1 for a scalar)
  std::string type_string() const;  // "DT_FLOAT[2,784]", for error messages
};

// Named tensors (by the signature's aliases), in name order.
using TensorMap = std::map<std::string, TensorValue>;

}  // namespace tern::serve
