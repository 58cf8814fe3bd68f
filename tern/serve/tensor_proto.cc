// TensorProto <-> TensorValue (see tensor_proto.h for the rules).
#include "tern/serve/tensor_proto.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <string>

#include "tensorflow/core/framework/tensor.pb.h"
#include "tern/base/checked_math.h"

namespace tern::serve {
namespace {

using tensorflow::TensorProto;

// --- which typed field a dtype reads ---

enum class ValField { kFloat, kDouble, kInt, kInt64, kBool, kHalf, kString };

constexpr std::string_view kValFieldNames[] = {"float_val", "double_val", "int_val",   "int64_val",
                                               "bool_val",  "half_val",   "string_val"};

std::string_view field_name(ValField f) {
  return kValFieldNames[static_cast<int>(f)];
}

std::string dims_string(const std::vector<int64_t>& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? "," : "") + std::to_string(dims[i]);
  return s + "]";
}

ValField field_of(WireDType d) {
  switch (d) {
    case WireDType::kFloat:
      return ValField::kFloat;
    case WireDType::kDouble:
      return ValField::kDouble;
    case WireDType::kInt64:
      return ValField::kInt64;
    case WireDType::kBool:
      return ValField::kBool;
    case WireDType::kHalf:
    case WireDType::kBFloat16:
      return ValField::kHalf;
    case WireDType::kString:
      return ValField::kString;
    default:
      return ValField::kInt;  // int32, int8, uint8
  }
}

int64_t field_size(const TensorProto& p, ValField f) {
  switch (f) {
    case ValField::kFloat:
      return p.float_val_size();
    case ValField::kDouble:
      return p.double_val_size();
    case ValField::kInt:
      return p.int_val_size();
    case ValField::kInt64:
      return p.int64_val_size();
    case ValField::kBool:
      return p.bool_val_size();
    case ValField::kHalf:
      return p.half_val_size();
    case ValField::kString:
      return p.string_val_size();
  }
  return 0;
}

// The name of a typed field other than `own` that holds values, or "" if none does.
std::string_view other_field_set(const TensorProto& p, ValField own) {
  for (int f = 0; f <= static_cast<int>(ValField::kString); ++f) {
    if (static_cast<ValField>(f) != own && field_size(p, static_cast<ValField>(f)) > 0) {
      return field_name(static_cast<ValField>(f));
    }
  }
  if (p.scomplex_val_size() > 0) return "scomplex_val";
  if (p.dcomplex_val_size() > 0) return "dcomplex_val";
  if (p.uint32_val_size() > 0) return "uint32_val";
  if (p.uint64_val_size() > 0) return "uint64_val";
  return "";
}

// --- typed values into a tensor ---

// Fills out[0..n) from `values` (n of them, or one broadcast), converting each with `convert`.
template <typename Dst, typename Values, typename Convert>
void fill_from(const Values& values, int64_t n, Dst* out, Convert convert) {
  if (values.size() == 1) {
    std::fill_n(out, n, convert(values.Get(0)));
    return;
  }
  for (int64_t i = 0; i < n; ++i) out[i] = convert(values.Get(static_cast<int>(i)));
}

template <typename Int>
Int int_in_range(int32_t v, std::string_view alias, WireDType d) {
  TERN_CHECK_ARG(v >= std::numeric_limits<Int>::min() && v <= std::numeric_limits<Int>::max(),
                 "input '", alias, "': int_val ", v, " is out of range for ", wire_dtype_name(d));
  return static_cast<Int>(v);
}

uint16_t half_bits(int32_t v, std::string_view alias) {
  // TF writes the 16 bits zero-extended; a client that sign-extends a short is accepted too.
  TERN_CHECK_ARG(v >= -32768 && v <= 65535, "input '", alias, "': half_val ", v,
                 " is not a 16-bit value");
  return static_cast<uint16_t>(v & 0xffff);
}

void fill_typed(const TensorProto& p, std::string_view alias, WireDType d, int64_t n, Tensor& t) {
  switch (d) {
    case WireDType::kFloat:
      fill_from(p.float_val(), n, t.data<float>(), [](float v) { return v; });
      return;
    case WireDType::kDouble:
      fill_from(p.double_val(), n, t.data<double>(), [](double v) { return v; });
      return;
    case WireDType::kInt32:
      fill_from(p.int_val(), n, t.data<int32_t>(), [](int32_t v) { return v; });
      return;
    case WireDType::kInt8:
      fill_from(p.int_val(), n, t.data<int8_t>(),
                [&](int32_t v) { return int_in_range<int8_t>(v, alias, d); });
      return;
    case WireDType::kUInt8:
      fill_from(p.int_val(), n, t.data<uint8_t>(),
                [&](int32_t v) { return int_in_range<uint8_t>(v, alias, d); });
      return;
    case WireDType::kInt64:
      fill_from(p.int64_val(), n, t.data<int64_t>(), [](int64_t v) { return v; });
      return;
    case WireDType::kBool:
      fill_from(p.bool_val(), n, t.data<bool>(), [](bool v) { return v; });
      return;
    case WireDType::kHalf:
      fill_from(p.half_val(), n, t.data<float16>(), [&](int32_t v) {
        float16 h;
        h.bits = half_bits(v, alias);
        return h;
      });
      return;
    case WireDType::kBFloat16:
      fill_from(p.half_val(), n, t.data<bfloat16>(), [&](int32_t v) {
        bfloat16 h;
        h.bits = half_bits(v, alias);
        return h;
      });
      return;
    default:
      throw_error(ErrorCode::kInternal, "fill_typed: unhandled dtype ", wire_dtype_name(d));
  }
}

// --- a tensor into typed values ---

template <typename Src, typename Add>
void add_each(const Tensor& t, Add add) {
  const Src* p = t.data<Src>();
  for (int64_t i = 0; i < t.num_elements(); ++i) add(p[i]);
}

void write_typed(const Tensor& t, TensorProto& proto) {
  switch (t.dtype()) {
    case DType::kF32:
      proto.mutable_float_val()->Add(t.data<float>(), t.data<float>() + t.num_elements());
      return;
    case DType::kF64:
      proto.mutable_double_val()->Add(t.data<double>(), t.data<double>() + t.num_elements());
      return;
    case DType::kI32:
      proto.mutable_int_val()->Add(t.data<int32_t>(), t.data<int32_t>() + t.num_elements());
      return;
    case DType::kI8:
      add_each<int8_t>(t, [&](int8_t v) { proto.add_int_val(v); });
      return;
    case DType::kU8:
      add_each<uint8_t>(t, [&](uint8_t v) { proto.add_int_val(v); });
      return;
    case DType::kI64:
      proto.mutable_int64_val()->Add(t.data<int64_t>(), t.data<int64_t>() + t.num_elements());
      return;
    case DType::kBool:
      add_each<bool>(t, [&](bool v) { proto.add_bool_val(v); });
      return;
    case DType::kF16:
      add_each<float16>(t, [&](float16 v) { proto.add_half_val(v.bits); });
      return;
    case DType::kBF16:
      add_each<bfloat16>(t, [&](bfloat16 v) { proto.add_half_val(v.bits); });
      return;
  }
}

}  // namespace

std::vector<int64_t> shape_from_proto(const tensorflow::TensorShapeProto& proto,
                                      std::string_view alias) {
  TERN_CHECK_ARG(!proto.unknown_rank(), "input '", alias,
                 "': tensor_shape has unknown_rank; a request tensor needs a known shape");
  TERN_CHECK_ARG(proto.dim_size() <= kMaxTensorRank, "input '", alias, "': tensor_shape has ",
                 proto.dim_size(), " dims, more than ", kMaxTensorRank);
  std::vector<int64_t> dims;
  dims.reserve(static_cast<size_t>(proto.dim_size()));
  for (const auto& d : proto.dim()) {
    TERN_CHECK_ARG(d.size() >= 0, "input '", alias, "': tensor_shape dim ", dims.size(), " is ",
                   d.size(), "; a request tensor needs known, non-negative dims");
    dims.push_back(d.size());
  }
  return dims;
}

void shape_to_proto(const std::vector<int64_t>& dims, bool unknown_rank,
                    tensorflow::TensorShapeProto& proto) {
  proto.Clear();
  if (unknown_rank) {
    proto.set_unknown_rank(true);
    return;
  }
  for (int64_t d : dims) proto.add_dim()->set_size(d);
}

TensorValue tensor_value_from_proto(const TensorProto& proto, std::string_view alias,
                                    int64_t max_bytes) {
  const auto dtype = wire_dtype_from_number(proto.dtype());
  TERN_CHECK_ARG(dtype.has_value() && *dtype != WireDType::kInvalid, "input '", alias, "': dtype ",
                 proto.dtype(), " is not a tensor dtype tern serves");
  const std::optional<DType> tern_dtype = tern_dtype_of(*dtype);
  TERN_CHECK_ARG(*dtype == WireDType::kString || tern_dtype.has_value(), "input '", alias,
                 "': dtype ", wire_dtype_name(*dtype), " is not supported");

  std::vector<int64_t> dims = shape_from_proto(proto.tensor_shape(), alias);
  const std::string what = str_cat("input '", alias, "' shape");
  int64_t n = 1;
  for (int64_t d : dims) n = checked_mul(n, d, what);

  const ValField own = field_of(*dtype);
  const std::string_view other = other_field_set(proto, own);
  TERN_CHECK_ARG(other.empty(), "input '", alias, "' is ", wire_dtype_name(*dtype), " but carries ",
                 other, "; its values go in ", field_name(own), " or tensor_content");

  const std::string& content = proto.tensor_content();
  const int64_t count = field_size(proto, own);
  if (!content.empty()) {
    TERN_CHECK_ARG(*dtype != WireDType::kString, "input '", alias,
                   "': DT_STRING values go in string_val, not tensor_content");
    TERN_CHECK_ARG(count == 0, "input '", alias, "' sets both tensor_content and ",
                   field_name(own));
    const int64_t want = checked_mul(n, static_cast<int64_t>(dtype_size(*tern_dtype)), what);
    TERN_CHECK_ARG(static_cast<int64_t>(content.size()) == want, "input '", alias,
                   "': tensor_content has ", content.size(), " bytes, but ",
                   wire_dtype_name(*dtype), dims_string(dims), " needs ", want);
    Tensor t(*tern_dtype, Shape(dims));
    if (*tern_dtype == DType::kBool) {
      bool* out = t.data<bool>();
      for (int64_t i = 0; i < n; ++i) out[i] = content[static_cast<size_t>(i)] != 0;
    } else if (n > 0) {
      std::memcpy(t.raw_data(), content.data(), content.size());
    }
    return TensorValue::from_tensor(std::move(t));
  }

  TERN_CHECK_ARG(count == n || (count == 1 && n > 1), "input '", alias, "': ", count, " ",
                 field_name(own), " values for ", wire_dtype_name(*dtype), dims_string(dims), " (",
                 n, " elements; send one value per element, or one value for all)");
  if (*dtype == WireDType::kString) {
    int64_t bytes = 0;
    for (const std::string& s : proto.string_val()) {
      bytes = checked_add(bytes, static_cast<int64_t>(s.size() + sizeof(std::string)), what);
    }
    if (count == 1) bytes = checked_mul(bytes, n, what);
    TERN_CHECK_ARG(bytes <= max_bytes, "input '", alias, "': broadcasting one string to ", n,
                   " elements needs ", bytes, " bytes, over the limit of ", max_bytes);
    std::vector<std::string> strings;
    if (count == 1) {
      strings.assign(static_cast<size_t>(n), proto.string_val(0));
    } else {
      strings.assign(proto.string_val().begin(), proto.string_val().end());
    }
    return TensorValue::from_strings(std::move(dims), std::move(strings));
  }
  const int64_t bytes = checked_mul(n, static_cast<int64_t>(dtype_size(*tern_dtype)), what);
  TERN_CHECK_ARG(count == n || bytes <= max_bytes, "input '", alias, "': broadcasting one ",
                 field_name(own), " value to ", wire_dtype_name(*dtype), dims_string(dims),
                 " needs ", bytes, " bytes, over the limit of ", max_bytes);
  Tensor t(*tern_dtype, Shape(dims));
  if (n > 0) fill_typed(proto, alias, *dtype, n, t);
  TensorValue v = TensorValue::from_tensor(std::move(t));
  v.dtype = *dtype;
  return v;
}

void tensor_value_to_proto(const TensorValue& value, TensorProto& proto) {
  proto.Clear();
  proto.set_dtype(static_cast<tensorflow::DataType>(value.dtype));
  shape_to_proto(value.shape, false, *proto.mutable_tensor_shape());
  if (value.is_string()) {
    TERN_CHECK(static_cast<int64_t>(value.strings.size()) == value.num_elements(), "output of ",
               value.type_string(), " holds ", value.strings.size(), " strings");
    proto.mutable_string_val()->Add(value.strings.begin(), value.strings.end());
    return;
  }
  const Tensor t = value.numbers.to_host();
  TERN_CHECK(wire_dtype_of(t.dtype()) == value.dtype, "output of ", value.type_string(),
             " holds a tensor of ", dtype_name(t.dtype()));
  TERN_CHECK(t.num_elements() == value.num_elements(), "output of ", value.type_string(),
             " holds a tensor of ", t.shape());
  write_typed(t, proto);
}

}  // namespace tern::serve
