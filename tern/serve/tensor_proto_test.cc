// TensorProto <-> TensorValue: every accepted encoding, every refusal (naming the input), and the
// typed-field output TF Serving writes.
#include "tern/serve/tensor_proto.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "tensorflow/core/framework/tensor.pb.h"
#include "tensorflow_serving/apis/predict.pb.h"
#include "tern/serve/predict_request.h"

namespace tern::serve {
namespace {

using tensorflow::TensorProto;

TensorProto make_proto(tensorflow::DataType dtype, std::vector<int64_t> dims) {
  TensorProto p;
  p.set_dtype(dtype);
  for (int64_t d : dims) p.mutable_tensor_shape()->add_dim()->set_size(d);
  return p;
}

template <typename T>
std::string raw_bytes(const std::vector<T>& values) {
  std::string s(values.size() * sizeof(T), '\0');
  std::memcpy(s.data(), values.data(), s.size());
  return s;
}

// Runs `fn`, expects a tern::Error of `code` whose message contains every one of `parts`.
template <typename Fn>
void expect_error(Fn fn, ErrorCode code, std::initializer_list<std::string> parts) {
  try {
    fn();
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    for (const std::string& part : parts) {
      EXPECT_NE(e.message().find(part), std::string::npos) << e.message() << " lacks " << part;
    }
  }
}

TEST(TensorProtoTest, ReadsTensorContent) {
  TensorProto p = make_proto(tensorflow::DT_FLOAT, {2, 2});
  p.set_tensor_content(raw_bytes<float>({1.5f, -2, 3, 4}));
  const TensorValue v = tensor_value_from_proto(p, "x");
  EXPECT_EQ(v.dtype, WireDType::kFloat);
  EXPECT_EQ(v.shape, (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(v.numbers.to_doubles(), (std::vector<double>{1.5, -2, 3, 4}));
}

TEST(TensorProtoTest, ReadsTypedFieldsOfEveryDtype) {
  TensorProto f = make_proto(tensorflow::DT_FLOAT, {3});
  for (float x : {1.f, 2.f, 5.f}) f.add_float_val(x);
  EXPECT_EQ(tensor_value_from_proto(f, "x").numbers.to_doubles(), (std::vector<double>{1, 2, 5}));

  TensorProto d = make_proto(tensorflow::DT_DOUBLE, {2});
  d.add_double_val(0.25);
  d.add_double_val(1e300);
  EXPECT_EQ(tensor_value_from_proto(d, "x").numbers.to_doubles(),
            (std::vector<double>{0.25, 1e300}));

  TensorProto u8 = make_proto(tensorflow::DT_UINT8, {2});
  u8.add_int_val(0);
  u8.add_int_val(255);
  const TensorValue vu8 = tensor_value_from_proto(u8, "pixels");
  EXPECT_EQ(vu8.numbers.dtype(), DType::kU8);
  EXPECT_EQ(vu8.numbers.to_doubles(), (std::vector<double>{0, 255}));

  TensorProto i64 = make_proto(tensorflow::DT_INT64, {1});
  i64.add_int64_val(int64_t{1} << 40);
  EXPECT_EQ(tensor_value_from_proto(i64, "ids").numbers.data<int64_t>()[0], int64_t{1} << 40);

  TensorProto b = make_proto(tensorflow::DT_BOOL, {2});
  b.add_bool_val(true);
  b.add_bool_val(false);
  EXPECT_EQ(tensor_value_from_proto(b, "mask").numbers.to_doubles(), (std::vector<double>{1, 0}));

  TensorProto h = make_proto(tensorflow::DT_HALF, {1});
  h.add_half_val(0x3E00);  // 1.5 in binary16
  const TensorValue vh = tensor_value_from_proto(h, "h");
  EXPECT_EQ(vh.dtype, WireDType::kHalf);
  EXPECT_EQ(vh.numbers.to_doubles(), (std::vector<double>{1.5}));

  TensorProto bf = make_proto(tensorflow::DT_BFLOAT16, {1});
  bf.add_half_val(0x3FC0);  // 1.5 in bfloat16
  EXPECT_EQ(tensor_value_from_proto(bf, "b").numbers.to_doubles(), (std::vector<double>{1.5}));

  TensorProto s = make_proto(tensorflow::DT_STRING, {2});
  s.add_string_val(std::string("a\0b", 3));
  s.add_string_val("");
  const TensorValue vs = tensor_value_from_proto(s, "s");
  ASSERT_TRUE(vs.is_string());
  EXPECT_EQ(vs.strings, (std::vector<std::string>{std::string("a\0b", 3), ""}));
}

TEST(TensorProtoTest, NoShapeIsAScalar) {
  TensorProto p;
  p.set_dtype(tensorflow::DT_INT32);
  p.add_int_val(7);
  const TensorValue v = tensor_value_from_proto(p, "k");
  EXPECT_TRUE(v.shape.empty());
  EXPECT_EQ(v.numbers.to_doubles(), (std::vector<double>{7}));
}

TEST(TensorProtoTest, OneValueBroadcastsAsTensorFlowDoes) {
  TensorProto p = make_proto(tensorflow::DT_FLOAT, {2, 3});
  p.add_float_val(4.5f);
  EXPECT_EQ(tensor_value_from_proto(p, "x").numbers.to_doubles(), std::vector<double>(6, 4.5));
  TensorProto s = make_proto(tensorflow::DT_STRING, {3});
  s.add_string_val("z");
  EXPECT_EQ(tensor_value_from_proto(s, "s").strings, std::vector<std::string>(3, "z"));
}

TEST(TensorProtoTest, EmptyTensorNeedsNoValues) {
  TensorProto p = make_proto(tensorflow::DT_FLOAT, {0, 4});
  const TensorValue v = tensor_value_from_proto(p, "x");
  EXPECT_EQ(v.num_elements(), 0);
  EXPECT_EQ(v.shape, (std::vector<int64_t>{0, 4}));
}

TEST(TensorProtoTest, BoolContentBytesAreNormalized) {
  TensorProto p = make_proto(tensorflow::DT_BOOL, {3});
  p.set_tensor_content(std::string("\x00\x02\x01", 3));
  EXPECT_EQ(tensor_value_from_proto(p, "m").numbers.to_doubles(), (std::vector<double>{0, 1, 1}));
}

TEST(TensorProtoTest, RefusesBadTensorsNamingTheInput) {
  TensorProto short_content = make_proto(tensorflow::DT_FLOAT, {3});
  short_content.set_tensor_content(raw_bytes<float>({1, 2}));
  expect_error([&] { tensor_value_from_proto(short_content, "x"); }, ErrorCode::kInvalidArgument,
               {"input 'x'", "8 bytes", "needs 12"});

  TensorProto count = make_proto(tensorflow::DT_FLOAT, {3});
  count.add_float_val(1);
  count.add_float_val(2);
  expect_error([&] { tensor_value_from_proto(count, "x"); }, ErrorCode::kInvalidArgument,
               {"input 'x'", "2 float_val values", "3 elements"});

  TensorProto missing = make_proto(tensorflow::DT_FLOAT, {3});
  expect_error([&] { tensor_value_from_proto(missing, "x"); }, ErrorCode::kInvalidArgument,
               {"input 'x'", "0 float_val"});

  TensorProto wrong_field = make_proto(tensorflow::DT_FLOAT, {1});
  wrong_field.add_int_val(1);
  expect_error([&] { tensor_value_from_proto(wrong_field, "x"); }, ErrorCode::kInvalidArgument,
               {"input 'x'", "DT_FLOAT", "int_val"});

  TensorProto both = make_proto(tensorflow::DT_FLOAT, {1});
  both.add_float_val(1);
  both.set_tensor_content(raw_bytes<float>({1}));
  expect_error([&] { tensor_value_from_proto(both, "x"); }, ErrorCode::kInvalidArgument,
               {"input 'x'", "both tensor_content and float_val"});

  TensorProto range = make_proto(tensorflow::DT_UINT8, {1});
  range.add_int_val(256);
  expect_error([&] { tensor_value_from_proto(range, "img"); }, ErrorCode::kInvalidArgument,
               {"input 'img'", "256", "DT_UINT8"});

  TensorProto half = make_proto(tensorflow::DT_HALF, {1});
  half.add_half_val(70000);
  expect_error([&] { tensor_value_from_proto(half, "h"); }, ErrorCode::kInvalidArgument,
               {"input 'h'", "70000"});

  TensorProto string_content = make_proto(tensorflow::DT_STRING, {1});
  string_content.set_tensor_content("abc");
  expect_error([&] { tensor_value_from_proto(string_content, "s"); }, ErrorCode::kInvalidArgument,
               {"input 's'", "string_val"});
}

TEST(TensorProtoTest, RefusesUnservedDtypes) {
  for (int dtype : {0, 5 /*int16*/, 8 /*complex64*/, 20 /*resource*/, 22 /*uint32*/, 999}) {
    TensorProto p;
    p.set_dtype(static_cast<tensorflow::DataType>(dtype));
    expect_error([&] { tensor_value_from_proto(p, "x"); }, ErrorCode::kInvalidArgument,
                 {"input 'x'", "dtype"});
  }
}

TEST(TensorProtoTest, RefusesBadShapes) {
  TensorProto unknown = make_proto(tensorflow::DT_FLOAT, {});
  unknown.mutable_tensor_shape()->set_unknown_rank(true);
  expect_error([&] { tensor_value_from_proto(unknown, "x"); }, ErrorCode::kInvalidArgument,
               {"input 'x'", "unknown_rank"});

  TensorProto negative = make_proto(tensorflow::DT_FLOAT, {-1, 2});
  expect_error([&] { tensor_value_from_proto(negative, "x"); }, ErrorCode::kInvalidArgument,
               {"input 'x'", "-1"});

  TensorProto overflow = make_proto(tensorflow::DT_FLOAT, {int64_t{1} << 40, int64_t{1} << 40});
  overflow.add_float_val(1);
  expect_error([&] { tensor_value_from_proto(overflow, "x"); }, ErrorCode::kInvalidArgument,
               {"input 'x' shape", "overflows"});

  TensorProto rank = make_proto(tensorflow::DT_FLOAT, std::vector<int64_t>(300, 1));
  rank.add_float_val(1);
  expect_error([&] { tensor_value_from_proto(rank, "x"); }, ErrorCode::kInvalidArgument,
               {"input 'x'", "300 dims"});
}

TEST(TensorProtoTest, HugeDimsNeverAllocate) {
  // One value broadcast to 2^40 floats (4 TiB): refused by the byte cap before any allocation.
  TensorProto broadcast = make_proto(tensorflow::DT_FLOAT, {int64_t{1} << 40});
  broadcast.add_float_val(1);
  expect_error([&] { tensor_value_from_proto(broadcast, "x"); }, ErrorCode::kInvalidArgument,
               {"input 'x'", "over the limit"});
  // 4 bytes of content for 2^40 elements: the size check refuses it.
  TensorProto content = make_proto(tensorflow::DT_FLOAT, {int64_t{1} << 40});
  content.set_tensor_content(raw_bytes<float>({1}));
  expect_error([&] { tensor_value_from_proto(content, "x"); }, ErrorCode::kInvalidArgument,
               {"input 'x'", "4 bytes"});
  // A broadcast string, same.
  TensorProto str = make_proto(tensorflow::DT_STRING, {int64_t{1} << 40});
  str.add_string_val("abc");
  expect_error([&] { tensor_value_from_proto(str, "s"); }, ErrorCode::kInvalidArgument,
               {"input 's'", "over the limit"});
  // Under a caller's smaller cap too.
  TensorProto small = make_proto(tensorflow::DT_FLOAT, {1000});
  small.add_float_val(1);
  expect_error([&] { tensor_value_from_proto(small, "x", 100); }, ErrorCode::kInvalidArgument,
               {"4000 bytes", "limit of 100"});
}

TEST(TensorProtoTest, WritesTypedFieldsLikeTensorFlowServing) {
  TensorProto f;
  tensor_value_to_proto(TensorValue::from_tensor(Tensor::from_vector<float>({2}, {2.5f, 3})), f);
  EXPECT_EQ(f.dtype(), tensorflow::DT_FLOAT);
  ASSERT_EQ(f.tensor_shape().dim_size(), 1);
  EXPECT_EQ(f.tensor_shape().dim(0).size(), 2);
  ASSERT_EQ(f.float_val_size(), 2);
  EXPECT_EQ(f.float_val(0), 2.5f);
  EXPECT_EQ(f.float_val(1), 3.f);
  EXPECT_TRUE(f.tensor_content().empty());

  TensorProto u8;
  tensor_value_to_proto(TensorValue::from_tensor(Tensor::from_vector<uint8_t>({2}, {7, 255})), u8);
  EXPECT_EQ(u8.dtype(), tensorflow::DT_UINT8);
  ASSERT_EQ(u8.int_val_size(), 2);
  EXPECT_EQ(u8.int_val(1), 255);

  TensorProto i64;
  tensor_value_to_proto(TensorValue::from_tensor(Tensor::from_vector<int64_t>({1}, {-9})), i64);
  EXPECT_EQ(i64.dtype(), tensorflow::DT_INT64);
  ASSERT_EQ(i64.int64_val_size(), 1);
  EXPECT_EQ(i64.int64_val(0), -9);

  TensorProto h;
  tensor_value_to_proto(TensorValue::from_tensor(Tensor::from_values(DType::kF16, {1}, {1.5})), h);
  EXPECT_EQ(h.dtype(), tensorflow::DT_HALF);
  ASSERT_EQ(h.half_val_size(), 1);
  EXPECT_EQ(h.half_val(0), 0x3E00);

  TensorProto s;
  tensor_value_to_proto(TensorValue::from_strings({2, 1}, {"p", "q"}), s);
  EXPECT_EQ(s.dtype(), tensorflow::DT_STRING);
  EXPECT_EQ(s.tensor_shape().dim_size(), 2);
  ASSERT_EQ(s.string_val_size(), 2);
  EXPECT_EQ(s.string_val(1), "q");
}

TEST(TensorProtoTest, RoundTripsEveryServedDtype) {
  for (DType d : kAllDTypes) {
    const Tensor t = Tensor::from_values(d, {3}, {0, 1, 1});
    TensorProto p;
    tensor_value_to_proto(TensorValue::from_tensor(t), p);
    const TensorValue back = tensor_value_from_proto(p, "x");
    EXPECT_EQ(back.numbers.dtype(), d) << dtype_name(d);
    EXPECT_EQ(back.numbers.to_doubles(), t.to_doubles()) << dtype_name(d);
  }
}

TEST(PredictRequestTest, DecodesSpecInputsAndFilter) {
  tensorflow::serving::PredictRequest r;
  r.mutable_model_spec()->set_name("m");
  r.mutable_model_spec()->set_version_label("canary");
  TensorProto& x = (*r.mutable_inputs())["x"];
  x = make_proto(tensorflow::DT_FLOAT, {1});
  x.add_float_val(1);
  r.add_output_filter("y");
  const PredictCall call = parse_predict_request(r.SerializeAsString());
  EXPECT_EQ(call.spec.name, "m");
  EXPECT_FALSE(call.spec.version.has_value());
  EXPECT_EQ(call.spec.label, "canary");
  EXPECT_EQ(call.signature_name, "serving_default");
  ASSERT_EQ(call.inputs.count("x"), 1u);
  EXPECT_EQ(call.output_filter, (std::vector<std::string>{"y"}));

  r.mutable_model_spec()->mutable_version()->set_value(4);
  r.mutable_model_spec()->set_signature_name("other");
  const PredictCall call2 = predict_call_from_proto(r);
  EXPECT_EQ(call2.spec.version, 4);
  EXPECT_FALSE(call2.spec.label.has_value());
  EXPECT_EQ(call2.signature_name, "other");
}

TEST(PredictRequestTest, RefusesGarbageAndMissingSpec) {
  expect_error([] { parse_predict_request(std::string("\x0a\xff\xff\xff\xff\x0f", 6)); },
               ErrorCode::kInvalidArgument, {"does not parse"});
  expect_error([] { parse_predict_request(""); }, ErrorCode::kInvalidArgument, {"model_spec"});
  tensorflow::serving::PredictRequest r;
  r.mutable_model_spec();
  expect_error([&] { predict_call_from_proto(r); }, ErrorCode::kInvalidArgument, {"name"});
}

}  // namespace
}  // namespace tern::serve
