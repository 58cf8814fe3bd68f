// TensorFlow's DataType names and numbers, and TensorValue helpers.
#include "tern/serve/tensor_value.h"

#include <array>
#include <utility>

namespace tern::serve {
namespace {

constexpr std::array<std::pair<WireDType, std::string_view>, 13> kNames = {{
    {WireDType::kFloat, "DT_FLOAT"},
    {WireDType::kDouble, "DT_DOUBLE"},
    {WireDType::kInt32, "DT_INT32"},
    {WireDType::kUInt8, "DT_UINT8"},
    {WireDType::kInt16, "DT_INT16"},
    {WireDType::kInt8, "DT_INT8"},
    {WireDType::kString, "DT_STRING"},
    {WireDType::kInt64, "DT_INT64"},
    {WireDType::kBool, "DT_BOOL"},
    {WireDType::kBFloat16, "DT_BFLOAT16"},
    {WireDType::kHalf, "DT_HALF"},
    {WireDType::kUInt32, "DT_UINT32"},
    {WireDType::kUInt64, "DT_UINT64"},
}};

}  // namespace

std::string_view wire_dtype_name(WireDType d) {
  for (const auto& [w, name] : kNames) {
    if (w == d) return name;
  }
  return "DT_INVALID";
}

std::optional<WireDType> parse_wire_dtype(std::string_view name) {
  for (const auto& [w, n] : kNames) {
    if (n == name) return w;
  }
  return std::nullopt;
}

std::optional<WireDType> wire_dtype_from_number(int number) {
  for (const auto& [w, n] : kNames) {
    if (static_cast<int>(w) == number) return w;
  }
  return std::nullopt;
}

WireDType wire_dtype_of(DType d) {
  switch (d) {
    case DType::kF32:
      return WireDType::kFloat;
    case DType::kF64:
      return WireDType::kDouble;
    case DType::kBF16:
      return WireDType::kBFloat16;
    case DType::kF16:
      return WireDType::kHalf;
    case DType::kI8:
      return WireDType::kInt8;
    case DType::kU8:
      return WireDType::kUInt8;
    case DType::kI32:
      return WireDType::kInt32;
    case DType::kI64:
      return WireDType::kInt64;
    case DType::kBool:
      return WireDType::kBool;
  }
  return WireDType::kInvalid;
}

std::optional<DType> tern_dtype_of(WireDType d) {
  for (DType t : {DType::kF32, DType::kF64, DType::kBF16, DType::kF16, DType::kI8, DType::kU8,
                  DType::kI32, DType::kI64, DType::kBool}) {
    if (wire_dtype_of(t) == d) return t;
  }
  return std::nullopt;
}

TensorValue TensorValue::from_tensor(Tensor t) {
  TensorValue v;
  v.dtype = wire_dtype_of(t.dtype());
  v.shape = t.shape().dims();
  v.numbers = std::move(t);
  return v;
}

TensorValue TensorValue::from_strings(std::vector<int64_t> shape,
                                      std::vector<std::string> strings) {
  TensorValue v;
  v.dtype = WireDType::kString;
  v.shape = std::move(shape);
  v.strings = std::move(strings);
  TERN_CHECK_ARG(static_cast<int64_t>(v.strings.size()) == v.num_elements(),
                 "a DT_STRING tensor of ", v.type_string(), " needs ", v.num_elements(),
                 " strings, got ", v.strings.size());
  return v;
}

int64_t TensorValue::num_elements() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::string TensorValue::type_string() const {
  std::string s(wire_dtype_name(dtype));
  s += "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? "," : "") + std::to_string(shape[i]);
  return s + "]";
}

}  // namespace tern::serve
