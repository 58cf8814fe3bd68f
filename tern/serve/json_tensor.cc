// TF Serving's REST predict codec: JSON values -> TensorMap by dtype, TensorMap -> JSON.
#include "tern/serve/json_tensor.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <set>

#include "tern/base/error.h"
#include "tern/serve/base64.h"
#include "tern/serve/json_writer.h"
#include "tern/serve/tf_status.h"

namespace tern::serve {
namespace {

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? "," : "") + std::to_string(shape[i]);
  return s + "]";
}

// --- reading numbers by dtype ---

bool is_integer_token(std::string_view t) {
  return t.find_first_of(".eEIN") == std::string_view::npos;
}

template <typename T>
bool parse_integer(std::string_view t, T* out) {
  if (!is_integer_token(t)) return false;
  auto r = std::from_chars(t.data(), t.data() + t.size(), *out);
  return r.ec == std::errc() && r.ptr == t.data() + t.size();
}

// rapidjson reads every number as a double when asked (GetDouble); a number too big for a double
// is its parse error.
double parse_double(const JsonDocument& doc, uint32_t i) {
  std::string_view t = doc.text(i);
  bool negative = !t.empty() && t[0] == '-';
  std::string_view body = negative ? t.substr(1) : t;
  if (body == "NaN") return std::numeric_limits<double>::quiet_NaN();
  if (body == "Inf" || body == "Infinity") {
    return negative ? -std::numeric_limits<double>::infinity()
                    : std::numeric_limits<double>::infinity();
  }
  double v = 0;
  auto r = std::from_chars(t.data(), t.data() + t.size(), v);
  if (r.ec == std::errc::result_out_of_range) {
    v = std::strtod(std::string(t).c_str(), nullptr);  // underflow -> 0 / denormal
    if (std::isinf(v)) {
      throw_error(ErrorCode::kInvalidArgument,
                  "JSON Parse error: Number too big to be stored in double. at offset: ",
                  doc.node(i).begin);
    }
  }
  return v;
}

// static_cast<float> of an out-of-range double is undefined; IEEE round-to-nearest gives
// +-FLT_MAX up to half an ulp above it, then +-inf.
float narrow_to_float(double d) {
  constexpr double kMax = std::numeric_limits<float>::max();
  constexpr double kOverflow = kMax + 0x1p103;  // FLT_MAX + half an ulp
  if (std::isfinite(d) && std::abs(d) > kMax) {
    if (std::abs(d) >= kOverflow) return d < 0 ? -HUGE_VALF : HUGE_VALF;
    return static_cast<float>(d < 0 ? -kMax : kMax);
  }
  return static_cast<float>(d);
}

[[noreturn]] void type_error(const JsonDocument& doc, uint32_t i, WireDType dtype) {
  throw_error(ErrorCode::kInvalidArgument, "JSON Value: ", doc.excerpt(i),
              " Type: ", json_type_name(doc.type(i)),
              " is not of expected type: ", wire_dtype_name(dtype));
}

// A leaf for a nullable input's absent key (an `instances` object without it, or a columnar
// `inputs` object without it): a missing value, as JSON null is.
constexpr uint32_t kAbsentLeaf = 0xffffffffu;

bool is_missing(const JsonDocument& doc, uint32_t i) {
  return i == kAbsentLeaf || doc.type(i) == JsonType::kNull;
}

template <typename T>
void fill_numbers(const JsonDocument& doc, const std::vector<uint32_t>& leaves, WireDType dtype,
                  bool nullable, T* out) {
  for (size_t k = 0; k < leaves.size(); ++k) {
    uint32_t i = leaves[k];
    if constexpr (std::is_floating_point_v<T>) {
      if (nullable && is_missing(doc, i)) {
        out[k] = std::numeric_limits<T>::quiet_NaN();
        continue;
      }
    }
    TERN_CHECK(i != kAbsentLeaf, "an absent leaf for a non-nullable input");
    JsonType type = doc.type(i);
    if constexpr (std::is_same_v<T, bool>) {
      if (type != JsonType::kTrue && type != JsonType::kFalse) type_error(doc, i, dtype);
      out[k] = type == JsonType::kTrue;
    } else {
      if (type != JsonType::kNumber) type_error(doc, i, dtype);
      if constexpr (std::is_same_v<T, float>) {
        out[k] = narrow_to_float(parse_double(doc, i));
      } else if constexpr (std::is_same_v<T, double>) {
        out[k] = parse_double(doc, i);
      } else if constexpr (std::is_same_v<T, int64_t>) {
        if (!parse_integer(doc.text(i), &out[k])) type_error(doc, i, dtype);
      } else {
        // int32 / int8 / uint8: rapidjson's IsInt() (fits int32), then the proto's int_val is
        // narrowed to the width without a range check, as TF Serving does.
        int32_t v = 0;
        if (!parse_integer(doc.text(i), &v)) type_error(doc, i, dtype);
        out[k] = static_cast<T>(v);
      }
    }
  }
}

TensorValue make_tensor(const JsonDocument& doc, const TensorSpec& spec, std::vector<int64_t> shape,
                        const std::vector<uint32_t>& leaves) {
  const WireDType dtype = spec.dtype;
  if (dtype == WireDType::kString) {
    std::vector<std::string> strings;
    strings.reserve(leaves.size());
    for (uint32_t i : leaves) {
      if (spec.nullable && is_missing(doc, i)) {
        strings.emplace_back();
        continue;
      }
      TERN_CHECK(i != kAbsentLeaf, "an absent leaf for a non-nullable input");
      if (doc.type(i) == JsonType::kString) {
        strings.emplace_back(doc.text(i));
      } else if (doc.type(i) == JsonType::kObject) {
        if (!doc.is_base64_object(i)) {
          throw_error(ErrorCode::kInvalidArgument, "JSON Value: ", doc.excerpt(i),
                      " not formatted correctly for base64 data");
        }
        std::optional<std::string> bytes = base64_decode(doc.text(i + 2));
        if (!bytes) {
          throw_error(ErrorCode::kInvalidArgument, "Unable to base64 decode: ", doc.excerpt(i + 2),
                      " at offset: ", doc.node(i + 2).begin);
        }
        strings.push_back(std::move(*bytes));
      } else {
        type_error(doc, i, dtype);
      }
    }
    return TensorValue::from_strings(std::move(shape), std::move(strings));
  }
  std::optional<DType> tern = tern_dtype_of(dtype);
  if (!tern || *tern == DType::kBF16 || *tern == DType::kF16) {
    throw_error(ErrorCode::kUnimplemented, "Conversion of JSON Value: ",
                leaves.empty() || leaves[0] == kAbsentLeaf ? std::string("[]")
                                                           : doc.excerpt(leaves[0]),
                " to type: ", wire_dtype_name(dtype));
  }
  Tensor t(*tern, Shape(shape));
  switch (*tern) {
    case DType::kF32:
      fill_numbers(doc, leaves, dtype, spec.nullable, t.data<float>());
      break;
    case DType::kF64:
      fill_numbers(doc, leaves, dtype, spec.nullable, t.data<double>());
      break;
    case DType::kI8:
      fill_numbers(doc, leaves, dtype, spec.nullable, t.data<int8_t>());
      break;
    case DType::kU8:
      fill_numbers(doc, leaves, dtype, spec.nullable, t.data<uint8_t>());
      break;
    case DType::kI32:
      fill_numbers(doc, leaves, dtype, spec.nullable, t.data<int32_t>());
      break;
    case DType::kI64:
      fill_numbers(doc, leaves, dtype, spec.nullable, t.data<int64_t>());
      break;
    case DType::kBool:
      fill_numbers(doc, leaves, dtype, spec.nullable, t.data<bool>());
      break;
    default:
      TERN_CHECK(false, "unreachable dtype");
  }
  TensorValue v = TensorValue::from_tensor(std::move(t));
  v.dtype = dtype;
  return v;
}

// --- shapes of nested lists ---

// A dense tensor written as nested lists: its shape (from the first item at each level, as
// GetDenseTensorShape) and its leaves in row-major order, every list checked against the shape.
struct DenseValue {
  std::vector<int64_t> shape;
  std::vector<uint32_t> leaves;
};

void collect_leaves(const JsonDocument& doc, uint32_t i, size_t level, DenseValue& out) {
  const size_t rank = out.shape.size();
  if (doc.type(i) != JsonType::kArray) {
    if (level != rank) {
      throw_error(ErrorCode::kInvalidArgument, "JSON Value: ", doc.excerpt(i),
                  " found at incorrect level: ", level + 1,
                  " in the JSON DOM. Expected at level: ", rank);
    }
    out.leaves.push_back(i);
    return;
  }
  if (level >= rank) {
    throw_error(ErrorCode::kInvalidArgument, "Encountered list at unexpected level: ", level,
                " expected < ", rank);
  }
  const JsonNode& n = doc.node(i);
  if (static_cast<int64_t>(n.size) != out.shape[level]) {
    throw_error(ErrorCode::kInvalidArgument, "Encountered list at unexpected size: ", n.size,
                " at level: ", level, " expected size: ", out.shape[level]);
  }
  uint32_t item = doc.first_item(i);
  for (uint32_t k = 0; k < n.size; ++k) {
    collect_leaves(doc, item, level + 1, out);
    item = doc.next(item);
  }
}

DenseValue dense_value(const JsonDocument& doc, uint32_t i) {
  DenseValue out;
  for (uint32_t cur = i; doc.type(cur) == JsonType::kArray;) {
    out.shape.push_back(doc.node(cur).size);
    if (doc.node(cur).size == 0) break;
    cur = doc.first_item(cur);
  }
  collect_leaves(doc, i, 0, out);
  return out;
}

// --- row format ("instances") ---

bool is_named_object(const JsonDocument& doc, uint32_t i) {
  return doc.type(i) == JsonType::kObject && !doc.is_base64_object(i);
}

[[noreturn]] void rethrow_in_element(const Error& e, std::string_view where) {
  throw_error(ErrorCode::kInvalidArgument, "Failed to process element: ", where,
              " of 'instances' list. Error: ", tf_error_code_name(e.code()), ": ", e.message());
}

struct RowInput {
  bool seen = false;
  std::vector<int64_t> item_shape;
  std::vector<uint32_t> leaves;
};

void add_instance_item(const JsonDocument& doc, uint32_t value, RowInput& input) {
  DenseValue item = dense_value(doc, value);
  if (!input.seen) {
    input.seen = true;
    input.item_shape = item.shape;
  } else {
    size_t per_item = 1;
    for (int64_t d : input.item_shape) per_item *= static_cast<size_t>(d);
    if (item.leaves.size() != per_item) {
      throw_error(ErrorCode::kInvalidArgument, "Expecting tensor size: ", per_item,
                  " but got: ", item.leaves.size());
    }
    if (item.shape != input.item_shape) {
      throw_error(ErrorCode::kInvalidArgument, "Expecting shape ", shape_text(input.item_shape),
                  " but got: ", shape_text(item.shape));
    }
  }
  input.leaves.insert(input.leaves.end(), item.leaves.begin(), item.leaves.end());
}

// The per-example shape of a nullable input from its spec (all dims after the batch known).
std::vector<int64_t> absent_item_shape(const TensorSpec& spec) {
  std::vector<int64_t> item(spec.shape.begin() + (spec.shape.empty() ? 0 : 1), spec.shape.end());
  int64_t n = 1;
  for (int64_t d : item) {
    if (d < 0)
      throw_error(ErrorCode::kInvalidArgument,
                  "the key is absent, and the input's shape is not known to fill it");
    n *= std::min<int64_t>(d, int64_t{1} << 20);
    if (n > (int64_t{1} << 16))
      throw_error(ErrorCode::kInvalidArgument,
                  "the key is absent; only inputs of at most 65536 values per example may be");
  }
  return item;
}

// An absent key of an `instances` object: one item of missing values.
void add_absent_item(const TensorSpec& spec, RowInput& input) {
  std::vector<int64_t> item = absent_item_shape(spec);
  if (!input.seen) {
    input.seen = true;
    input.item_shape = item;
  } else if (item != input.item_shape) {
    throw_error(ErrorCode::kInvalidArgument, "Expecting shape ", shape_text(input.item_shape),
                " but got: ", shape_text(item));
  }
  size_t per_item = 1;
  for (int64_t d : item) per_item *= static_cast<size_t>(d);
  input.leaves.insert(input.leaves.end(), per_item, kAbsentLeaf);
}

TensorMap read_instances(const JsonDocument& doc, uint32_t list, const Signature& sig) {
  if (doc.type(list) != JsonType::kArray) {
    throw_error(ErrorCode::kInvalidArgument, "Excepting 'instances' to be an list/array");
  }
  const uint32_t count = doc.node(list).size;
  if (count == 0) throw_error(ErrorCode::kInvalidArgument, "No values in 'instances' array");
  const uint32_t first = doc.first_item(list);
  if (doc.type(first) != JsonType::kObject && sig.inputs.size() > 1) {
    throw_error(ErrorCode::kInvalidArgument,
                "instances is a plain list, but expecting list of objects as multiple input "
                "tensors required as per tensorinfo_map");
  }
  const bool objects = is_named_object(doc, first);
  std::map<std::string, RowInput, std::less<>> rows;
  uint32_t elem = first;
  for (uint32_t n = 0; n < count; ++n, elem = doc.next(elem)) {
    if (objects) {
      if (!is_named_object(doc, elem)) {
        throw_error(ErrorCode::kInvalidArgument, "Expecting object but got list at item ", n,
                    " of input list");
      }
      std::set<std::string_view> keys;
      uint32_t key = doc.first_key(elem);
      for (uint32_t m = 0; m < doc.node(elem).size; ++m, key = doc.next(key + 1)) {
        std::string_view name = doc.text(key);
        try {
          if (!sig.inputs.count(std::string(name))) {
            throw_error(ErrorCode::kInvalidArgument,
                        "JSON object: does not have named input: ", name);
          }
          if (!keys.insert(name).second) {
            throw_error(ErrorCode::kInvalidArgument, "duplicate key: ", name);
          }
          add_instance_item(doc, key + 1, rows[std::string(name)]);
        } catch (const Error& e) {
          rethrow_in_element(e, str_cat(n, " key: ", name));
        }
      }
      // A nullable input's key may be left out: its values are missing (NaN, or "").
      size_t absent_nullable = 0;
      for (const auto& [alias, spec] : sig.inputs) {
        if (!spec.nullable || keys.count(alias)) continue;
        ++absent_nullable;
        try {
          add_absent_item(spec, rows[alias]);
        } catch (const Error& e) {
          rethrow_in_element(e, str_cat(n, " key: ", alias));
        }
      }
      if (keys.size() + absent_nullable != sig.inputs.size()) {
        std::string names;
        for (const auto& [alias, spec] : sig.inputs) names += (names.empty() ? "" : ",") + alias;
        throw_error(ErrorCode::kInvalidArgument, "Failed to process element: ", n,
                    " of 'instances' list. JSON object: ", doc.excerpt(elem),
                    " keys must be equal to: ", names);
      }
    } else {
      if (is_named_object(doc, elem)) {
        throw_error(ErrorCode::kInvalidArgument, "Expecting value/list but got object at item ", n,
                    " of input list");
      }
      try {
        add_instance_item(doc, elem, rows[sig.inputs.begin()->first]);
      } catch (const Error& e) {
        rethrow_in_element(e, std::to_string(n));
      }
    }
  }
  TensorMap out;
  for (auto& [name, row] : rows) {
    std::vector<int64_t> shape = {count};
    shape.insert(shape.end(), row.item_shape.begin(), row.item_shape.end());
    out.emplace(name, make_tensor(doc, sig.inputs.at(name), std::move(shape), row.leaves));
  }
  return out;
}

// --- columnar format ("inputs") ---

TensorMap read_inputs(const JsonDocument& doc, uint32_t value, const Signature& sig) {
  TensorMap out;
  if (!is_named_object(doc, value)) {
    if (sig.inputs.size() > 1) {
      throw_error(ErrorCode::kInvalidArgument,
                  "inputs is a plain value/list, but expecting an object as multiple input "
                  "tensors required as per tensorinfo_map");
    }
    const auto& [name, spec] = *sig.inputs.begin();
    DenseValue dense = dense_value(doc, value);
    out.emplace(name, make_tensor(doc, spec, std::move(dense.shape), dense.leaves));
    return out;
  }
  std::vector<std::string> absent;  // nullable inputs left out: all missing, at the batch size
  for (const auto& [name, spec] : sig.inputs) {
    std::optional<uint32_t> item = doc.find_member(value, name);
    if (!item) {
      if (spec.nullable) {
        absent.push_back(name);
        continue;
      }
      throw_error(ErrorCode::kInvalidArgument, "Missing named input: ", name,
                  " in 'inputs' object.");
    }
    DenseValue dense = dense_value(doc, *item);
    out.emplace(name, make_tensor(doc, spec, std::move(dense.shape), dense.leaves));
  }
  for (const std::string& name : absent) {
    if (out.empty() || out.begin()->second.shape.empty())
      throw_error(ErrorCode::kInvalidArgument, "Missing named input: ", name,
                  " in 'inputs' object (it may be left out only next to an input that gives the "
                  "batch size).");
    const TensorSpec& spec = sig.inputs.at(name);
    std::vector<int64_t> shape{out.begin()->second.shape[0]};
    std::vector<int64_t> item;
    try {
      item = absent_item_shape(spec);
    } catch (const Error& e) {
      throw_error(ErrorCode::kInvalidArgument, "Input: ", name, ": ", e.message());
    }
    shape.insert(shape.end(), item.begin(), item.end());
    size_t n = 1;
    for (int64_t d : shape) n *= static_cast<size_t>(d);
    out.emplace(name, make_tensor(doc, spec, std::move(shape),
                                  std::vector<uint32_t>(n, kAbsentLeaf)));
  }
  return out;
}

// --- writing ---

template <typename T>
void write_leaf(JsonWriter& w, T v) {
  if constexpr (std::is_same_v<T, float>) {
    w.float_value(v);
  } else if constexpr (std::is_same_v<T, double>) {
    w.double_value(v);
  } else if constexpr (std::is_same_v<T, bool>) {
    w.bool_value(v);
  } else {
    w.int_value(static_cast<int64_t>(v));
  }
}

template <typename T>
void write_numbers(JsonWriter& w, const T* data, const std::vector<int64_t>& shape, size_t dim,
                   int64_t* offset) {
  if (dim >= shape.size()) {
    write_leaf(w, data[(*offset)++]);
    return;
  }
  w.begin_array();
  for (int64_t k = 0; k < shape[dim]; ++k) write_numbers(w, data, shape, dim + 1, offset);
  w.end_array();
}

void write_strings(JsonWriter& w, const TensorValue& v, bool as_bytes, size_t dim,
                   int64_t* offset) {
  if (dim >= v.shape.size()) {
    const std::string& s = v.strings[static_cast<size_t>((*offset)++)];
    if (as_bytes) {
      w.bytes_value(s);
    } else {
      w.string(s);
    }
    return;
  }
  w.begin_array();
  for (int64_t k = 0; k < v.shape[dim]; ++k) write_strings(w, v, as_bytes, dim + 1, offset);
  w.end_array();
}

bool is_bytes_alias(std::string_view alias, const TensorValue& v) {
  constexpr std::string_view kSuffix = "_bytes";
  return v.is_string() && alias.size() >= kSuffix.size() &&
         alias.substr(alias.size() - kSuffix.size()) == kSuffix;
}

}  // namespace

void write_tensor_json(JsonWriter& w, const TensorValue& value, bool as_bytes, size_t dim,
                       int64_t* offset) {
  if (value.is_string()) return write_strings(w, value, as_bytes, dim, offset);
  Tensor t = value.numbers.to_host();
  TERN_CHECK(t.defined() && t.shape().dims() == value.shape, "output ", value.type_string(),
             " has no matching tensor");
  switch (t.dtype()) {
    case DType::kF32:
      return write_numbers(w, t.data<float>(), value.shape, dim, offset);
    case DType::kF64:
      return write_numbers(w, t.data<double>(), value.shape, dim, offset);
    case DType::kBF16:
    case DType::kF16: {
      Tensor f = t.cast(DType::kF32);
      return write_numbers(w, f.data<float>(), value.shape, dim, offset);
    }
    case DType::kI8:
      return write_numbers(w, t.data<int8_t>(), value.shape, dim, offset);
    case DType::kU8:
      return write_numbers(w, t.data<uint8_t>(), value.shape, dim, offset);
    case DType::kI32:
      return write_numbers(w, t.data<int32_t>(), value.shape, dim, offset);
    case DType::kI64:
      return write_numbers(w, t.data<int64_t>(), value.shape, dim, offset);
    case DType::kBool:
      return write_numbers(w, t.data<bool>(), value.shape, dim, offset);
  }
}

JsonDocument parse_json_body(std::string_view body) {
  JsonDocument doc = JsonDocument::parse(body);
  if (doc.type(doc.root()) != JsonType::kObject) {
    throw_error(ErrorCode::kInvalidArgument, "JSON Value: ", doc.excerpt(doc.root()),
                " Is not object");
  }
  return doc;
}

std::string json_signature_name(const JsonDocument& doc) {
  std::optional<uint32_t> name = doc.find_member(doc.root(), "signature_name");
  if (!name) return kDefaultSignature;
  if (doc.type(*name) != JsonType::kString) {
    throw_error(ErrorCode::kInvalidArgument, "JSON Value: ", doc.excerpt(*name),
                " not formatted correctly. 'signature_name' key must be a string value.");
  }
  return std::string(doc.text(*name));
}

JsonPredictRequest json_predict_inputs(const JsonDocument& doc, const Signature& signature) {
  JsonPredictRequest req;
  req.signature_name = json_signature_name(doc);
  if (signature.inputs.empty()) {
    throw_error(ErrorCode::kInvalidArgument,
                "Failed to get input map for signature: ", req.signature_name);
  }
  std::optional<uint32_t> instances = doc.find_member(doc.root(), "instances");
  std::optional<uint32_t> inputs = doc.find_member(doc.root(), "inputs");
  if (instances && inputs) {
    throw_error(ErrorCode::kInvalidArgument,
                "Not formatted correctly expecting only one of 'inputs' or 'instances' keys to "
                "exist");
  }
  if (instances) {
    req.format = JsonFormat::kRow;
    req.inputs = read_instances(doc, *instances, signature);
  } else if (inputs) {
    req.format = JsonFormat::kColumnar;
    req.inputs = read_inputs(doc, *inputs, signature);
  } else {
    throw_error(ErrorCode::kInvalidArgument, "Missing 'inputs' or 'instances' key");
  }
  return req;
}

JsonPredictRequest parse_predict_request(std::string_view body, const SignatureMap& signatures) {
  JsonDocument doc = parse_json_body(body);
  std::string name = json_signature_name(doc);
  auto it = signatures.find(name);
  if (it == signatures.end()) {
    throw_error(ErrorCode::kInvalidArgument, "Serving signature name: \"", name,
                "\" not found in signature def");
  }
  return json_predict_inputs(doc, it->second);
}

std::string predict_response_json(const TensorMap& outputs, JsonFormat format) {
  TERN_CHECK_ARG(!outputs.empty(), "Cannot convert empty tensor map to JSON");
  JsonWriter w;
  w.begin_object();
  const bool objects = outputs.size() > 1;
  if (format == JsonFormat::kColumnar) {
    w.key("outputs");
    if (objects) w.begin_object();
    for (const auto& [name, value] : outputs) {
      if (objects) w.key(name);
      int64_t offset = 0;
      write_tensor_json(w, value, is_bytes_alias(name, value), 0, &offset);
    }
    if (objects) w.end_object();
    w.end_object();
    return w.take();
  }
  int64_t batch = -1;
  for (const auto& [name, value] : outputs) {
    if (value.shape.empty()) {
      throw_error(ErrorCode::kInvalidArgument, "Tensor name: ", name, " has no shape information ");
    }
    if (batch >= 0 && value.shape[0] != batch) {
      throw_error(ErrorCode::kInvalidArgument, "Tensor name: ", name,
                  " has inconsistent batch size: ", value.shape[0], " expecting: ", batch);
    }
    batch = value.shape[0];
  }
  std::map<std::string, int64_t> offsets;
  w.key("predictions");
  w.begin_array();
  for (int64_t item = 0; item < batch; ++item) {
    if (objects) w.begin_object();
    for (const auto& [name, value] : outputs) {
      if (objects) w.key(name);
      write_tensor_json(w, value, is_bytes_alias(name, value), 1, &offsets[name]);
    }
    if (objects) w.end_object();
  }
  w.end_array();
  w.end_object();
  return w.take();
}

std::string error_json(std::string_view message) {
  JsonWriter w;
  w.begin_object();
  w.key("error");
  w.string(message);
  w.end_object();
  return w.take();
}

}  // namespace tern::serve
