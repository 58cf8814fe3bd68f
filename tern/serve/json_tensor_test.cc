// The REST JSON codec without a server: number formatting, base64, the JSON tape, dtype rules
// (SERVING.md sections 1.2 and 1.3).
#include "tern/serve/json_tensor.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "tern/serve/base64.h"
#include "tern/serve/json_writer.h"

namespace tern::serve {
namespace {

TEST(JsonWriter, FloatsAsTfServingWritesThem) {
  EXPECT_EQ(format_float(3.0f), "3.0");
  EXPECT_EQ(format_float(2.5f), "2.5");
  EXPECT_EQ(format_float(555557.5f), "555557.5");  // serving#1332: 6 digits would not round-trip
  EXPECT_EQ(format_float(0.1f), "0.1");            // not 0.100000001
  EXPECT_EQ(format_float(9e6f), "9e+06");          // exponent form: no ".0"
  EXPECT_EQ(format_float(3e-5f), "3e-05");
  EXPECT_EQ(format_float(-0.0f), "-0.0");
  EXPECT_EQ(format_float(1.0f / 3.0f), "0.333333343");  // max_digits10 = 9
  EXPECT_EQ(format_float(std::numeric_limits<float>::quiet_NaN()), "NaN");
  EXPECT_EQ(format_float(std::numeric_limits<float>::infinity()), "Infinity");
  EXPECT_EQ(format_float(-std::numeric_limits<float>::infinity()), "-Infinity");
  EXPECT_EQ(format_double(0.1), "0.1");
  EXPECT_EQ(format_double(1.0 / 3.0), "0.33333333333333331");  // max_digits10 = 17
  EXPECT_EQ(format_double(1234567.0), "1234567.0");
}

TEST(JsonWriter, EscapesStrings) {
  std::string out;
  append_json_string(out, std::string("a\"b\\c\n\x01", 7));
  EXPECT_EQ(out, R"("a\"b\\c\n\u0001")");
}

TEST(Base64, StandardAlphabetOnly) {
  EXPECT_EQ(base64_encode("hello"), "aGVsbG8=");
  EXPECT_EQ(base64_encode(std::string("\0\xff", 2)), "AP8=");
  EXPECT_EQ(base64_decode("aGVsbG8=").value(), "hello");
  EXPECT_EQ(base64_decode("aGVsbG8").value(), "hello");  // padding optional
  EXPECT_EQ(base64_decode("").value(), "");
  EXPECT_FALSE(base64_decode("_w-A"));       // web-safe
  EXPECT_FALSE(base64_decode("aGVs bG8="));  // whitespace
  EXPECT_FALSE(base64_decode("a"));
  EXPECT_FALSE(base64_decode("aGVsbG8==="));
}

TEST(JsonDocument, ParsesTokensEscapesAndStopsAfterTheRoot) {
  JsonDocument doc = JsonDocument::parse(
      R"( {"a": [NaN, -Infinity, Inf, 1e3], "s": "\u00e9\ud83d\ude00\"", "a": 1} trailing)");
  uint32_t a = doc.find_member(doc.root(), "a").value();  // the first of duplicates
  ASSERT_EQ(doc.type(a), JsonType::kArray);
  EXPECT_EQ(doc.node(a).size, 4u);
  uint32_t item = doc.first_item(a);
  EXPECT_EQ(doc.text(item), "NaN");
  EXPECT_EQ(doc.text(doc.next(item)), "-Infinity");
  EXPECT_EQ(doc.text(doc.find_member(doc.root(), "s").value()), "\xc3\xa9\xf0\x9f\x98\x80\"");
}

TEST(JsonDocument, RejectsMalformedInputWithTheOffset) {
  auto message = [](std::string_view json) {
    try {
      JsonDocument::parse(json);
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
      return e.message();
    }
    return std::string("parsed");
  };
  EXPECT_EQ(message(""), "JSON Parse error: The document is empty at offset: 0");
  EXPECT_EQ(message("  "), "JSON Parse error: The document is empty at offset: 2");
  EXPECT_NE(message("[1,]").find("at offset: 3"), std::string::npos);
  EXPECT_NE(message("[01]").find("JSON Parse error"), std::string::npos);
  EXPECT_NE(message("\"\\ud800\"").find("surrogate"), std::string::npos);
  EXPECT_NE(message("[nan]").find("Invalid value"), std::string::npos);
  EXPECT_NE(message(std::string(600, '[')).find("Nesting deeper"), std::string::npos);
  EXPECT_NE(message("{\"a\" 1}").find("colon"), std::string::npos);
}

SignatureMap one_input(WireDType dtype) {
  Signature sig;
  sig.inputs["x"] = TensorSpec{dtype, {-1}, false, "x:0"};
  return {{"serving_default", sig}};
}

TensorValue parse_x(WireDType dtype, const std::string& instances) {
  return parse_predict_request(R"({"instances": )" + instances + "}", one_input(dtype))
      .inputs.at("x");
}

std::string error_of(WireDType dtype, const std::string& instances) {
  try {
    parse_x(dtype, instances);
  } catch (const Error& e) {
    return e.message();
  }
  return "parsed";
}

TEST(JsonTensor, FloatsNarrowSilently) {
  // SERVING.md 1.2: FloatTensorWithPrecisionLoss, ...ExceedsMaxReturnsInf,
  // ...ExceedsMinReturnsZero.
  TensorValue v = parse_x(WireDType::kFloat, "[1435774380, 1e39, -1e39, 1e-50, NaN, 2]");
  ASSERT_EQ(v.type_string(), "DT_FLOAT[6]");
  const float* f = v.numbers.data<float>();
  EXPECT_EQ(f[0], 1435774336.0f);
  EXPECT_EQ(f[1], std::numeric_limits<float>::infinity());
  EXPECT_EQ(f[2], -std::numeric_limits<float>::infinity());
  EXPECT_EQ(f[3], 0.0f);
  EXPECT_TRUE(std::isnan(f[4]));
  EXPECT_EQ(f[5], 2.0f);
  EXPECT_NE(error_of(WireDType::kDouble, "[1e400]").find("Number too big"), std::string::npos);
}

TEST(JsonTensor, IntegersMustBeWrittenAsIntegers) {
  EXPECT_NE(error_of(WireDType::kInt32, "[1.0]").find("is not of expected type: DT_INT32"),
            std::string::npos);
  EXPECT_NE(error_of(WireDType::kInt32, "[1e2]").find("DT_INT32"), std::string::npos);
  EXPECT_NE(error_of(WireDType::kInt32, "[2147483648]").find("DT_INT32"), std::string::npos);
  EXPECT_NE(error_of(WireDType::kInt64, "[9223372036854775808]").find("DT_INT64"),
            std::string::npos);
  EXPECT_NE(error_of(WireDType::kBool, "[1]").find("DT_BOOL"), std::string::npos);
  TensorValue i64 = parse_x(WireDType::kInt64, "[9223372036854775807, -0]");
  EXPECT_EQ(i64.numbers.data<int64_t>()[0], std::numeric_limits<int64_t>::max());
  // No range check per width (add_int_val(GetInt())): 300 wraps in uint8.
  TensorValue u8 = parse_x(WireDType::kUInt8, "[300, 255]");
  EXPECT_EQ(u8.numbers.data<uint8_t>()[0], 44);
  EXPECT_EQ(u8.numbers.data<uint8_t>()[1], 255);
  TensorValue b = parse_x(WireDType::kBool, "[[true, false]]");
  EXPECT_EQ(b.type_string(), "DT_BOOL[1,2]");
  EXPECT_FALSE(b.numbers.data<bool>()[1]);
}

TEST(JsonTensor, ShapesComeFromTheLists) {
  EXPECT_EQ(parse_x(WireDType::kFloat, "[[[1,2]],[[3,4]]]").type_string(), "DT_FLOAT[2,1,2]");
  EXPECT_EQ(parse_x(WireDType::kString, R"([["a", {"b64": "Yg=="}]])").strings.at(1), "b");
  EXPECT_NE(error_of(WireDType::kFloat, "[[1,2],[3,[4]]]")
                .find("Encountered list at unexpected level: 1 expected < 1"),
            std::string::npos);
  EXPECT_NE(
      error_of(WireDType::kFloat, "[[[1],2]]")
          .find("JSON Value: 2 found at incorrect level: 2 in the JSON DOM. Expected at level: 2"),
      std::string::npos);
  // Columnar scalars are rank 0.
  TensorValue s =
      parse_predict_request(R"({"inputs": 4})", one_input(WireDType::kFloat)).inputs.at("x");
  EXPECT_EQ(s.type_string(), "DT_FLOAT[]");
}

TEST(JsonTensor, ResponseFormats) {
  TensorMap out;
  out["y"] = TensorValue::from_tensor(Tensor::from_vector<float>(Shape{2, 2}, {1, 2.5f, 3, 4}));
  out["id_bytes"] = TensorValue::from_strings({2}, {"a", std::string("\xff", 1)});
  EXPECT_EQ(predict_response_json(out, JsonFormat::kRow),
            R"({"predictions":[{"id_bytes":{"b64":"YQ=="},"y":[1.0,2.5]},)"
            R"({"id_bytes":{"b64":"/w=="},"y":[3.0,4.0]}]})");
  EXPECT_EQ(
      predict_response_json(out, JsonFormat::kColumnar),
      R"({"outputs":{"id_bytes":[{"b64":"YQ=="},{"b64":"/w=="}],"y":[[1.0,2.5],[3.0,4.0]]}})");
  out["z"] = TensorValue::from_tensor(Tensor::from_vector<int64_t>(Shape{3}, {1, 2, 3}));
  try {
    predict_response_json(out, JsonFormat::kRow);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.message(), "Tensor name: z has inconsistent batch size: 3 expecting: 2");
  }
  EXPECT_EQ(error_json("a \"b\""), R"({"error":"a \"b\""})");
}

// A transform's raw features: nullable numbers (one a vector) and strings, and a required one.
SignatureMap raw_signature() {
  Signature sig;
  sig.inputs["price"] = {WireDType::kFloat, {-1}, false, "", true};
  sig.inputs["vec"] = {WireDType::kDouble, {-1, 2}, false, "", true};
  sig.inputs["make"] = {WireDType::kString, {-1}, false, "", true};
  sig.inputs["n"] = {WireDType::kInt64, {-1}, false, ""};
  return {{kDefaultSignature, sig}};
}

std::string raw_error(const std::string& body) {
  try {
    parse_predict_request(body, raw_signature());
  } catch (const Error& e) {
    return e.message();
  }
  return "parsed";
}

TEST(JsonTensor, NullableInputsTakeNullAndAbsentKeysAsMissing) {
  JsonPredictRequest r = parse_predict_request(
      R"({"instances": [{"price": 1.5, "vec": [1, null], "make": "audi", "n": 1},
                        {"price": null, "make": null, "n": 2},
                        {"n": 3}]})",
      raw_signature());
  const float* price = r.inputs.at("price").numbers.data<float>();
  EXPECT_EQ(price[0], 1.5f);
  EXPECT_TRUE(std::isnan(price[1]));
  EXPECT_TRUE(std::isnan(price[2]));
  EXPECT_EQ(r.inputs.at("vec").type_string(), "DT_DOUBLE[3,2]");
  const double* vec = r.inputs.at("vec").numbers.data<double>();
  EXPECT_EQ(vec[0], 1);
  for (int k = 1; k < 6; ++k) EXPECT_TRUE(std::isnan(vec[k])) << k;
  EXPECT_EQ(r.inputs.at("make").strings, (std::vector<std::string>{"audi", "", ""}));
  // Columnar: null values, and a left-out input at the others' batch size.
  JsonPredictRequest c = parse_predict_request(
      R"({"inputs": {"price": [null, 2], "make": ["a", null], "n": [1, 2]}})", raw_signature());
  EXPECT_TRUE(std::isnan(c.inputs.at("price").numbers.data<float>()[0]));
  EXPECT_EQ(c.inputs.at("make").strings, (std::vector<std::string>{"a", ""}));
  EXPECT_EQ(c.inputs.at("vec").type_string(), "DT_DOUBLE[2,2]");
  EXPECT_TRUE(std::isnan(c.inputs.at("vec").numbers.data<double>()[3]));
}

TEST(JsonTensor, OtherInputsStillRefuseNullAndMissingKeys) {
  // TF Serving's behaviour where an input is not nullable.
  EXPECT_NE(raw_error(R"({"instances": [{"n": null}]})")
                .find("JSON Value: null Type: Null is not of expected type: DT_INT64"),
            std::string::npos);
  EXPECT_NE(raw_error(R"({"instances": [{"price": 1}]})").find("keys must be equal to"),
            std::string::npos);
  EXPECT_NE(raw_error(R"({"inputs": {"price": [1]}})").find("Missing named input: n"),
            std::string::npos);
  EXPECT_NE(error_of(WireDType::kFloat, "[null]").find("Type: Null is not of expected type"),
            std::string::npos);
  // Nothing gives the batch size.
  Signature only;
  only.inputs["a"] = {WireDType::kFloat, {-1}, false, "", true};
  only.inputs["b"] = {WireDType::kFloat, {-1}, false, "", true};
  EXPECT_THROW(parse_predict_request(R"({"inputs": {}})", {{kDefaultSignature, only}}), Error);
}

}  // namespace
}  // namespace tern::serve
