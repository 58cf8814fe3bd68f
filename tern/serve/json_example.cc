// Classify / regress: JSON examples -> serialized tf.Example, outputs -> {"results": ...}.
#include "tern/serve/json_example.h"

#include <charconv>
#include <cmath>
#include <limits>

#include "tern/base/error.h"
#include "tern/data/example_proto.h"
#include "tern/serve/base64.h"
#include "tern/serve/json_writer.h"

namespace tern::serve {
namespace {

std::string_view kind_word(data::FeatureKind kind) {
  switch (kind) {
    case data::FeatureKind::kBytes:
      return "bytes";
    case data::FeatureKind::kFloat:
      return "float";
    case data::FeatureKind::kInt64:
      return "int64";
    case data::FeatureKind::kNone:
      break;
  }
  return "UNKNOWN";
}

// The feature may take a value of `kind` (it has none yet or already holds that kind).
void expect_kind(data::Feature& f, data::FeatureKind kind, std::string_view name) {
  if (f.kind != data::FeatureKind::kNone && f.kind != kind) {
    throw_error(ErrorCode::kInvalidArgument, "Unexpected element type in feature: ", name,
                " expecting type: ", kind_word(f.kind));
  }
  f.kind = kind;
}

float number_as_float(const JsonDocument& doc, uint32_t i) {
  std::string_view t = doc.text(i);
  bool negative = !t.empty() && t[0] == '-';
  std::string_view body = negative ? t.substr(1) : t;
  if (body == "NaN") return std::numeric_limits<float>::quiet_NaN();
  if (body == "Inf" || body == "Infinity") {
    return negative ? -std::numeric_limits<float>::infinity()
                    : std::numeric_limits<float>::infinity();
  }
  double d = std::strtod(std::string(t).c_str(), nullptr);
  if (std::isinf(d)) {
    throw_error(
        ErrorCode::kInvalidArgument,
        "JSON Parse error: Number too big to be stored in double. at offset: ", doc.node(i).begin);
  }
  if (std::abs(d) > std::numeric_limits<float>::max()) {
    return d < 0 ? -std::numeric_limits<float>::infinity() : std::numeric_limits<float>::infinity();
  }
  return static_cast<float>(d);
}

void add_value(const JsonDocument& doc, uint32_t i, std::string_view name, data::Feature& f) {
  switch (doc.type(i)) {
    case JsonType::kTrue:
    case JsonType::kFalse:
      expect_kind(f, data::FeatureKind::kInt64, name);
      f.int64_list.push_back(doc.type(i) == JsonType::kTrue ? 1 : 0);
      return;
    case JsonType::kString:
      expect_kind(f, data::FeatureKind::kBytes, name);
      f.bytes_list.emplace_back(doc.text(i));
      return;
    case JsonType::kObject: {
      if (!doc.is_base64_object(i)) break;
      expect_kind(f, data::FeatureKind::kBytes, name);
      std::optional<std::string> bytes = base64_decode(doc.text(i + 2));
      if (!bytes) {
        throw_error(ErrorCode::kInvalidArgument, "Unable to base64 decode: ", doc.excerpt(i + 2),
                    " in feature: ", name);
      }
      f.bytes_list.push_back(std::move(*bytes));
      return;
    }
    case JsonType::kNumber: {
      std::string_view t = doc.text(i);
      if (t.find_first_of(".eEIN") != std::string_view::npos) {
        expect_kind(f, data::FeatureKind::kFloat, name);
        f.float_list.push_back(number_as_float(doc, i));
        return;
      }
      int64_t v = 0;
      auto r = std::from_chars(t.data(), t.data() + t.size(), v);
      if (r.ec == std::errc() && r.ptr == t.data() + t.size()) {
        expect_kind(f, data::FeatureKind::kInt64, name);
        f.int64_list.push_back(v);
        return;
      }
      uint64_t u = 0;
      auto ru = std::from_chars(t.data(), t.data() + t.size(), u);
      if (ru.ec == std::errc() && ru.ptr == t.data() + t.size()) {
        throw_error(ErrorCode::kInvalidArgument, "Feature: ", name,
                    " has uint64 element. Only int64 is supported.");
      }
      // Beyond uint64: rapidjson holds it as a double.
      expect_kind(f, data::FeatureKind::kFloat, name);
      f.float_list.push_back(number_as_float(doc, i));
      return;
    }
    default:
      break;
  }
  throw_error(ErrorCode::kInvalidArgument, "Feature: ", name,
              " has element with unexpected JSON type: ", json_type_name(doc.type(i)));
}

void add_features(const JsonDocument& doc, uint32_t object, data::Features& out) {
  if (doc.type(object) != JsonType::kObject) {
    throw_error(ErrorCode::kInvalidArgument, "Example must be JSON object but got JSON ",
                json_type_name(doc.type(object)));
  }
  uint32_t key = doc.first_key(object);
  for (uint32_t m = 0; m < doc.node(object).size; ++m, key = doc.next(key + 1)) {
    std::string_view name = doc.text(key);
    uint32_t value = key + 1;
    data::Feature f;
    if (doc.type(value) == JsonType::kArray) {
      uint32_t item = doc.first_item(value);
      for (uint32_t k = 0; k < doc.node(value).size; ++k, item = doc.next(item)) {
        add_value(doc, item, name, f);
      }
    } else {
      add_value(doc, value, name, f);
    }
    out.insert_or_assign(std::string(name), std::move(f));
  }
}

void check_examples_signature(const std::string& name, const Signature& sig, const char* method,
                              const char* what) {
  if (sig.method_name != method) {
    throw_error(ErrorCode::kInvalidArgument, "Expected ", what, " signature method_name to be ",
                method, ". Was: ", sig.method_name, " (signature \"", name, "\")");
  }
  if (sig.inputs.size() != 1 || sig.inputs.begin()->first != kExamplesInput ||
      sig.inputs.begin()->second.dtype != WireDType::kString) {
    throw_error(ErrorCode::kInvalidArgument, "Expected one DT_STRING input Tensor named '",
                kExamplesInput, "' in ", what, " signature \"", name, "\"");
  }
}

// The output named `alias` if present, checked to be `dtype` with dim 0 == batch.
const TensorValue* find_output(const TensorMap& outputs, const char* alias, WireDType dtype,
                               int64_t batch) {
  auto it = outputs.find(alias);
  if (it == outputs.end()) return nullptr;
  const TensorValue& v = it->second;
  if (v.dtype != dtype) {
    throw_error(ErrorCode::kInvalidArgument, "Expected ", alias, " Tensor of ",
                wire_dtype_name(dtype), ". Got: ", v.type_string());
  }
  if (v.shape.empty() || v.shape[0] != batch) {
    throw_error(ErrorCode::kInvalidArgument, "Expected ", alias, " Tensor with batch size ", batch,
                ". Got: ", v.type_string());
  }
  return &v;
}

}  // namespace

std::vector<std::string> json_examples(const JsonDocument& doc) {
  data::Features context;
  if (std::optional<uint32_t> c = doc.find_member(doc.root(), "context")) {
    add_features(doc, *c, context);
  }
  std::optional<uint32_t> list = doc.find_member(doc.root(), "examples");
  if (!list) {
    throw_error(ErrorCode::kInvalidArgument,
                "When method is classify, key 'examples' is expected and was not found");
  }
  if (doc.type(*list) != JsonType::kArray) {
    throw_error(ErrorCode::kInvalidArgument, "Expecting 'examples' value to be an list/array");
  }
  if (doc.node(*list).size == 0) {
    throw_error(ErrorCode::kInvalidArgument, "'examples' value is an empty array");
  }
  std::vector<std::string> out;
  uint32_t item = doc.first_item(*list);
  for (uint32_t k = 0; k < doc.node(*list).size; ++k, item = doc.next(item)) {
    data::Example example;
    example.features = context;
    add_features(doc, item, example.features);
    out.push_back(data::serialize_example(example));
  }
  return out;
}

TensorMap examples_tensor_map(std::vector<std::string> serialized) {
  TensorMap m;
  int64_t n = static_cast<int64_t>(serialized.size());
  m.emplace(kExamplesInput, TensorValue::from_strings({n}, std::move(serialized)));
  return m;
}

void check_classify_signature(const std::string& name, const Signature& sig) {
  check_examples_signature(name, sig, kClassifyMethod, "classification");
}

void check_regress_signature(const std::string& name, const Signature& sig) {
  check_examples_signature(name, sig, kRegressMethod, "regression");
}

std::string classify_response_json(const TensorMap& outputs, int64_t batch) {
  const TensorValue* classes = find_output(outputs, kClassesOutput, WireDType::kString, batch);
  const TensorValue* scores = find_output(outputs, kScoresOutput, WireDType::kFloat, batch);
  TERN_CHECK_ARG(classes || scores,
                 "Expected classification signature outputs to contain at least one of '",
                 kClassesOutput, "' or '", kScoresOutput, "'");
  for (const TensorValue* v : {classes, scores}) {
    TERN_CHECK_ARG(!v || v->shape.size() == 2,
                   "Expected Tensor shape: [batch_size num_classes] but got ", v->type_string());
  }
  TERN_CHECK_ARG(!classes || !scores || classes->shape[1] == scores->shape[1],
                 "Tensors class and score should match in dim[1]. Got ",
                 classes ? classes->type_string() : "", " and ",
                 scores ? scores->type_string() : "");
  const int64_t k = classes ? classes->shape[1] : scores->shape[1];
  Tensor score_tensor = scores ? scores->numbers.to_host() : Tensor();
  const float* score_data = scores ? score_tensor.data<float>() : nullptr;
  JsonWriter w;
  w.begin_object();
  w.key("results");
  w.begin_array();
  for (int64_t b = 0; b < batch; ++b) {
    w.begin_array();
    for (int64_t c = 0; c < k; ++c) {
      size_t at = static_cast<size_t>(b * k + c);
      w.begin_array();
      w.string(classes ? std::string_view(classes->strings[at]) : std::string_view());
      w.float_value(score_data ? score_data[at] : 0.0f);
      w.end_array();
    }
    w.end_array();
  }
  w.end_array();
  w.end_object();
  return w.take();
}

std::string regress_response_json(const TensorMap& outputs, int64_t batch) {
  const TensorValue* out = find_output(outputs, kRegressOutput, WireDType::kFloat, batch);
  TERN_CHECK_ARG(out, "Expected regression signature output '", kRegressOutput, "'");
  TERN_CHECK_ARG(out->shape.size() == 1 || (out->shape.size() == 2 && out->shape[1] == 1),
                 "Expected output Tensor shape to be either [batch_size] or [batch_size, 1] but "
                 "got ",
                 out->type_string());
  Tensor t = out->numbers.to_host();
  const float* data = t.data<float>();
  JsonWriter w;
  w.begin_object();
  w.key("results");
  w.begin_array();
  for (int64_t b = 0; b < batch; ++b) w.float_value(data[b]);
  w.end_array();
  w.end_object();
  return w.take();
}

}  // namespace tern::serve
