// export_model with a front graph of several raw inputs (what tern/transform exports): the
// signature takes the graph's inputs by name, a string input through the fingerprint decoder,
// nullable numbers and strings; the served outputs equal the model on the front graph's output;
// REST bodies with null and left-out keys give the same; the model directory refuses a fingerprint
// decoder on a non-i64 graph input and a nullable integer input, naming them; gRPC Predict with
// DT_STRING and DT_FLOAT TensorProtos gives what the servable gives.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <functional>
#include <limits>
#include <nlohmann/json.hpp>

#include "tensorflow_serving/apis/prediction_service.grpc.pb.h"
#include "tern/base/fingerprint.h"
#include "tern/io/atomic_file.h"
#include "tern/nn/dense.h"
#include "tern/serve/export.h"
#include "tern/serve/grpc_server.h"
#include "tern/serve/json_tensor.h"
#include "tern/serve/loaded_model.h"
#include "tests/support/random_tensor.h"

namespace tern::serve {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// price f32 [B] (NaN -> 0), make i64 [B] (1 for "audi"), px u8 [B, 2] (their sum) -> x f32 [B, 3].
std::unique_ptr<ir::Graph> front_graph() {
  auto g = std::make_unique<ir::Graph>("front");
  ir::Value* price = g->input("price", {DType::kF32, Shape{1}});
  ir::Value* make = g->input("make", {DType::kI64, Shape{1}});
  ir::Value* px = g->input("px", {DType::kU8, Shape{1, 2}});
  ir::Value* filled =
      g->add("where", {g->add("not_equal", {price, price}), g->scalar(DType::kF32, 0), price});
  // The fingerprint of "audi" as an i64 constant (a double could not hold it).
  ir::Value* key =
      g->constant(Tensor::from_vector(Shape{}, std::vector<int64_t>{fingerprint64_i64("audi")}));
  ir::Value* audi = g->add("cast", {g->add("equal", {make, key})}, {{"dtype", DType::kF32}});
  ir::Value* sum = g->add("sum", {g->add("cast", {px}, {{"dtype", DType::kF32}})},
                          {{"axes", std::vector<int64_t>{1}}});
  auto col = [&](ir::Value* v) {
    return g->add("reshape", {v}, {{"shape", std::vector<int64_t>{-1, 1}}});
  };
  g->add_output("x", g->add("concat", {col(filled), col(audi), col(sum)}, {{"axis", int64_t{1}}}));
  return g;
}

ExportOptions front_options(const ir::Graph* g) {
  ExportOptions o;
  o.front.graph = g;
  o.front.output = "x";
  o.front.decoders["make"] = {.kind = DecoderKind::kFingerprint};
  o.front.nullable = {"price", "make"};
  o.front.description = "test front graph";
  o.classifier = true;
  o.class_names = {"cheap", "dear"};
  return o;
}

std::string temp_dir() {
  std::string d = fs::temp_directory_path() / str_cat("tern_front_graph_test_", ::getpid());
  fs::remove_all(d);
  return d;
}

TEST(FrontGraph, ExportsRawInputsAndServesThem) {
  const std::string dir = temp_dir();
  auto g = front_graph();
  nn::Sequential model({nn::Dense(2)}, Shape{3});
  model.build();
  ExportReport report = export_model(model, front_options(g.get()), dir + "/1");
  EXPECT_EQ(report.signatures, (std::vector<std::string>{"serving_default"}));
  ModelDirContents c = read_model_dir(dir + "/1");
  const StoredSignature& s = c.signatures.at("serving_default");
  EXPECT_EQ(s.signature.inputs.at("make").dtype, WireDType::kString);
  EXPECT_EQ(s.signature.inputs.at("make").shape, (std::vector<int64_t>{-1}));
  EXPECT_TRUE(s.signature.inputs.at("make").nullable);
  EXPECT_EQ(s.decoders.at("make").kind, DecoderKind::kFingerprint);
  EXPECT_EQ(s.signature.inputs.at("price").dtype, WireDType::kFloat);
  EXPECT_TRUE(s.signature.inputs.at("price").nullable);
  EXPECT_EQ(s.signature.inputs.at("px").dtype, WireDType::kUInt8);
  EXPECT_EQ(s.signature.inputs.at("px").shape, (std::vector<int64_t>{-1, 2}));
  EXPECT_FALSE(s.signature.inputs.at("px").nullable);
  EXPECT_EQ(c.assets.at("class_names.txt"), "cheap\ndear\n");
  EXPECT_NE(c.assets.at("preprocessing.json").find("test front graph"), std::string::npos);

  // Served raw features = the model on the front graph's output, computed by hand.
  const float nan = std::numeric_limits<float>::quiet_NaN();
  TensorMap in;
  in["price"] =
      TensorValue::from_tensor(Tensor::from_vector(Shape{3}, std::vector<float>{2, nan, 5}));
  in["make"] = TensorValue::from_strings({3}, {"audi", "bmw", ""});
  in["px"] = TensorValue::from_tensor(
      Tensor::from_vector(Shape{3, 2}, std::vector<uint8_t>{1, 2, 3, 4, 250, 5}));
  ServablePtr served = load_servable(dir + "/1");
  TensorMap out = served->run("serving_default", in);
  Tensor x = Tensor::from_vector(Shape{3, 3}, std::vector<float>{2, 1, 3, 0, 0, 7, 5, 0, 255});
  Tensor want = model.predict(x, 3);
  for (int64_t i = 0; i < 6; ++i)
    EXPECT_NEAR(out.at("logits").numbers.data<float>()[i], want.data<float>()[i], 1e-6) << i;

  // Over the JSON codec: null and a left-out key are the missing values above.
  JsonPredictRequest req = parse_predict_request(
      R"({"instances": [{"price": 2, "make": "audi", "px": [1, 2]},
                        {"price": null, "make": "bmw", "px": [3, 4]},
                        {"price": 5, "px": [250, 5]}]})",
      served->signatures());
  TensorMap json_out = served->run("serving_default", req.inputs);
  for (int64_t i = 0; i < 6; ++i)
    EXPECT_EQ(json_out.at("logits").numbers.data<float>()[i],
              out.at("logits").numbers.data<float>()[i]);
  fs::remove_all(dir);
}

TEST(FrontGraph, ModelDirRefusesDecodersAndNullableOnTheWrongInputs) {
  const std::string dir = temp_dir();
  auto g = front_graph();
  nn::Sequential model({nn::Dense(2)}, Shape{3});
  export_model(model, front_options(g.get()), dir + "/1");
  const std::string file = dir + "/1/" + kSignaturesFile;
  const json sig = json::parse(io::read_file(file));
  auto tampered = [&](const std::function<void(json&)>& edit) {
    json j = sig;
    edit(j["signatures"]["serving_default"]["inputs"]);
    std::error_code ec;
    fs::remove_all(dir + "/2", ec);
    fs::copy(dir + "/1", dir + "/2", fs::copy_options::recursive);
    fs::remove(dir + "/2/" + kSignaturesFile);
    io::write_file_atomically(dir + "/2/" + kSignaturesFile, j.dump());
    fs::remove(dir + "/2/" + kFingerprintFile);
    io::write_file_atomically(dir + "/2/" + kFingerprintFile,
                              json({{"sha256", fingerprint_model_dir(dir + "/2")}}).dump());
    return dir + "/2";
  };
  const std::string file2 = dir + "/2/" + kSignaturesFile;
  EXPECT_TERN_ERROR(read_model_dir(tampered([](json& in) {
                      in["price"]["dtype"] = "DT_STRING";
                      in["price"]["decoder"] = {{"kind", "fingerprint"}};
                    })),
                    ErrorCode::kInvalidArgument,
                    file2 +
                        ": signature 'serving_default' input 'price' has a fingerprint "
                        "decoder but graph input 'price' is DT_FLOAT[-1] (DT_INT64[-1] needed)");
  EXPECT_TERN_ERROR(read_model_dir(tampered([](json& in) { in["px"]["nullable"] = true; })),
                    ErrorCode::kInvalidArgument,
                    "input 'px' is nullable but DT_UINT8[-1,2]; only DT_FLOAT, DT_DOUBLE and "
                    "DT_STRING inputs can carry a missing value");
  EXPECT_TERN_ERROR(read_model_dir(tampered([](json& in) { in["price"]["nullable"] = "yes"; })),
                    ErrorCode::kInvalidArgument,
                    "key 'signatures.serving_default.inputs.price.nullable' must be true or false");
  EXPECT_TERN_ERROR(
      read_model_dir(tampered([](json& in) { in["make"]["decoder"]["kind"] = "fingerprints"; })),
      ErrorCode::kInvalidArgument, "expected image, example or fingerprint");
  // Round trip of what export wrote.
  StoredSignatures sigs = parse_signatures(io::read_file(file), file);
  EXPECT_EQ(parse_signatures(write_signatures(sigs), "again"), sigs);
  fs::remove_all(dir);
}

// One model ("front", version 1) of one loaded directory, for the gRPC server.
class OneModel : public ServingBackend {
 public:
  explicit OneModel(ServablePtr servable) : servable_(std::move(servable)) {}
  ServableHandle resolve(const ModelSpec& spec) const override {
    TERN_CHECK_ARG(spec.name == "front", "no model ", spec.name);
    return {"front", 1, servable_};
  }
  std::vector<VersionStatus> status(const ModelSpec&) const override {
    return {{.version = 1, .state = VersionState::kAvailable}};
  }
  TensorMap predict(const ServableHandle& handle, const std::string& signature,
                    const TensorMap& inputs, Clock::time_point) override {
    return handle.servable->run(signature, inputs);
  }
  void record_request(const RequestInfo&, std::optional<ErrorCode>,
                      std::chrono::microseconds) override {}
  std::string prometheus_metrics() const override { return ""; }

 private:
  ServablePtr servable_;
};

TEST(FrontGraph, GrpcPredictWithStringTensorProtos) {
  const std::string dir = temp_dir();
  auto g = front_graph();
  nn::Sequential model({nn::Dense(2)}, Shape{3});
  export_model(model, front_options(g.get()), dir + "/1");
  ServablePtr served = load_servable(dir + "/1");
  OneModel backend(served);
  GrpcServer server(backend, {.host = "127.0.0.1"});
  server.start();
  auto stub = tensorflow::serving::PredictionService::NewStub(grpc::CreateChannel(
      "127.0.0.1:" + std::to_string(server.port()), grpc::InsecureChannelCredentials()));
  tensorflow::serving::PredictRequest r;
  r.mutable_model_spec()->set_name("front");
  tensorflow::TensorProto& make = (*r.mutable_inputs())["make"];
  make.set_dtype(tensorflow::DT_STRING);
  make.mutable_tensor_shape()->add_dim()->set_size(2);
  make.add_string_val("audi");
  make.add_string_val("");  // missing
  tensorflow::TensorProto& price = (*r.mutable_inputs())["price"];
  price.set_dtype(tensorflow::DT_FLOAT);
  price.mutable_tensor_shape()->add_dim()->set_size(2);
  price.add_float_val(std::numeric_limits<float>::quiet_NaN());  // missing
  price.add_float_val(7);
  tensorflow::TensorProto& px = (*r.mutable_inputs())["px"];
  px.set_dtype(tensorflow::DT_UINT8);
  px.mutable_tensor_shape()->add_dim()->set_size(2);
  px.mutable_tensor_shape()->add_dim()->set_size(2);
  for (int v : {1, 2, 3, 4}) px.add_int_val(v);
  tensorflow::serving::PredictResponse response;
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  grpc::Status status = stub->Predict(&context, r, &response);
  ASSERT_TRUE(status.ok()) << status.error_message();
  const tensorflow::TensorProto& logits = response.outputs().at("logits");
  Tensor want =
      model.predict(Tensor::from_vector(Shape{2, 3}, std::vector<float>{0, 1, 3, 7, 0, 7}), 2);
  ASSERT_EQ(logits.float_val_size(), 4);
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(logits.float_val(i), want.data<float>()[i], 1e-6) << i;
  server.stop();
  fs::remove_all(dir);
}

}  // namespace
}  // namespace tern::serve
