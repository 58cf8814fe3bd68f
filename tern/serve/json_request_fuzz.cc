// Fuzz target: the REST request codec (cmake/tern_fuzz.cmake builds it with libFuzzer or the
// replay driver). Any bytes, read as a predict body against a fixed signature of every JSON dtype
// (float, double, int8/32/64, uint8, bool, string), one of nullable inputs (null and absent keys
// are missing values), and as a classify body, must either parse or
// fail with InvalidArgument / Unimplemented — never crash, hang or throw anything else. What
// parses must have tensors whose sizes match their shapes and must write back as a response in
// both formats (row format may refuse ragged batches with InvalidArgument).
#include <cstdlib>
#include <string_view>

#include "tern/base/error.h"
#include "tern/serve/json_example.h"
#include "tern/serve/json_tensor.h"

namespace {

using namespace tern::serve;

SignatureMap make_signatures() {
  auto spec = [](WireDType d) { return TensorSpec{d, {-1}, false, ""}; };
  Signature one;
  one.inputs["x"] = spec(WireDType::kFloat);
  Signature many;
  many.inputs["f"] = spec(WireDType::kFloat);
  many.inputs["d"] = spec(WireDType::kDouble);
  many.inputs["i8"] = spec(WireDType::kInt8);
  many.inputs["i32"] = spec(WireDType::kInt32);
  many.inputs["i64"] = spec(WireDType::kInt64);
  many.inputs["u8"] = spec(WireDType::kUInt8);
  many.inputs["b"] = spec(WireDType::kBool);
  many.inputs["s_bytes"] = spec(WireDType::kString);
  Signature half;
  half.inputs["h"] = spec(WireDType::kHalf);
  // A transform's raw features: nullable numbers (a vector too) and strings, and a required input.
  Signature raw;
  auto nullable = [](WireDType d, std::vector<int64_t> shape) {
    return TensorSpec{d, std::move(shape), false, "", true};
  };
  raw.inputs["price"] = nullable(WireDType::kFloat, {-1});
  raw.inputs["vec"] = nullable(WireDType::kDouble, {-1, 3});
  raw.inputs["make"] = nullable(WireDType::kString, {-1});
  raw.inputs["px"] = TensorSpec{WireDType::kUInt8, {-1, 2}, false, ""};
  return {{"serving_default", one}, {"many", many}, {"half", half}, {"raw", raw}};
}

template <typename Fn>
void expect_clean(Fn&& fn) {
  try {
    fn();
  } catch (const tern::Error& e) {
    if (e.code() != tern::ErrorCode::kInvalidArgument &&
        e.code() != tern::ErrorCode::kUnimplemented) {
      std::abort();
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const SignatureMap signatures = make_signatures();
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  expect_clean([&] {
    JsonPredictRequest req = parse_predict_request(body, signatures);
    for (const auto& [name, value] : req.inputs) {
      const int64_t n = value.num_elements();
      if (value.is_string() ? static_cast<int64_t>(value.strings.size()) != n
                            : value.numbers.num_elements() != n) {
        std::abort();
      }
    }
    (void)predict_response_json(req.inputs, JsonFormat::kColumnar);
    (void)predict_response_json(req.inputs, JsonFormat::kRow);
  });
  expect_clean([&] {
    JsonDocument doc = parse_json_body(body);
    (void)examples_tensor_map(json_examples(doc));
  });
  return 0;
}
