// GrpcServer end to end on 127.0.0.1: the generated TF Serving client stubs against a test backend
// (half_plus_two, versions 1 and 2, labels), every error path with its status code, deadlines,
// graceful stop; and a hand-encoded wire check (ProtoWriter / ProtoReader from the public field
// numbers, sent with grpc::GenericStub), standing for a client generated from TF Serving's own
// .proto files.
#include "tern/serve/grpc_server.h"

#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <cstring>
#include <future>
#include <mutex>
#include <thread>

#include "tensorflow_serving/apis/model_service.grpc.pb.h"
#include "tensorflow_serving/apis/prediction_service.grpc.pb.h"
#include "tern/format/proto_reader.h"
#include "tern/format/proto_wire.h"

namespace tern::serve {
namespace {

namespace tfs = tensorflow::serving;
using std::chrono::milliseconds;

// --- the test backend ---

// half_plus_two (version 1: y = 0.5x + 2) and half_plus_three (version 2: y = 0.5x + 3), with
// "doubled" = 2x; a "strings" signature (length and echo of DT_STRING) and a "slow" one.
class HalfPlus : public Servable {
 public:
  explicit HalfPlus(float offset) : offset_(offset) {
    TensorSpec vec{.dtype = WireDType::kFloat, .shape = {-1}};
    Signature predict;
    predict.inputs["x"] = vec;
    predict.inputs["x"].name = "x:0";
    predict.outputs["y"] = vec;
    predict.outputs["y"].name = "y:0";
    predict.outputs["doubled"] = vec;
    sigs_["serving_default"] = predict;
    sigs_["slow"] = predict;
    Signature strings;
    strings.inputs["s"] = {.dtype = WireDType::kString, .shape = {-1}};
    strings.outputs["length"] = {.dtype = WireDType::kInt64, .shape = {-1}};
    strings.outputs["echo"] = {.dtype = WireDType::kString, .shape = {-1}};
    sigs_["strings"] = strings;
  }
  const SignatureMap& signatures() const override { return sigs_; }
  TensorMap run(const std::string& signature, const TensorMap& inputs) const override {
    if (signature == "slow") std::this_thread::sleep_for(milliseconds(300));
    TensorMap out;
    if (signature == "strings") {
      const TensorValue& s = inputs.at("s");
      std::vector<int64_t> lengths;
      for (const std::string& v : s.strings) lengths.push_back(static_cast<int64_t>(v.size()));
      out["length"] =
          TensorValue::from_tensor(Tensor::from_vector<int64_t>(Shape(s.shape), lengths));
      out["echo"] = s;
      return out;
    }
    const Tensor& x = inputs.at("x").numbers;
    Tensor y(DType::kF32, x.shape()), doubled(DType::kF32, x.shape());
    for (int64_t i = 0; i < x.num_elements(); ++i) {
      y.data<float>()[i] = 0.5f * x.data<float>()[i] + offset_;
      doubled.data<float>()[i] = 2 * x.data<float>()[i];
    }
    out["y"] = TensorValue::from_tensor(y);
    out["doubled"] = TensorValue::from_tensor(doubled);
    return out;
  }

 private:
  float offset_;
  SignatureMap sigs_;
};

struct Recorded {
  RequestInfo info;
  std::optional<ErrorCode> code;
};

class TestBackend : public ServingBackend {
 public:
  TestBackend() {
    versions_[1] = std::make_shared<HalfPlus>(2.f);
    versions_[2] = std::make_shared<HalfPlus>(3.f);
  }

  ServableHandle resolve(const ModelSpec& spec) const override {
    const int64_t v = version_of(spec);
    const auto it = versions_.find(v);
    if (it == versions_.end()) {
      throw_error(ErrorCode::kNotFound, "Servable not found for request: Specific(", spec.name,
                  ", ", v, ")");
    }
    return {spec.name, v, it->second};
  }
  std::vector<VersionStatus> status(const ModelSpec& spec) const override {
    std::vector<VersionStatus> all = {{.version = 1, .state = VersionState::kAvailable},
                                      {.version = 2, .state = VersionState::kAvailable},
                                      {.version = 3,
                                       .state = VersionState::kEnd,
                                       .error = ErrorCode::kDataLoss,
                                       .error_message = "weights.safetensors: truncated"}};
    if (!spec.version && !spec.label) {
      check_model(spec);
      return all;
    }
    const int64_t v = version_of(spec);
    for (const VersionStatus& s : all) {
      if (s.version == v) return {s};
    }
    throw_error(ErrorCode::kNotFound, "Could not find version ", v, " of model ", spec.name);
  }
  TensorMap predict(const ServableHandle& handle, const std::string& signature,
                    const TensorMap& inputs, Clock::time_point deadline) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      last_deadline_ = deadline;
    }
    TensorMap out = handle.servable->run(signature, inputs);
    if (Clock::now() > deadline) throw_error(ErrorCode::kDeadlineExceeded, "deadline passed");
    return out;
  }
  void record_request(const RequestInfo& info, std::optional<ErrorCode> code,
                      std::chrono::microseconds) override {
    std::lock_guard<std::mutex> lock(mu_);
    recorded_.push_back({info, code});
  }
  std::string prometheus_metrics() const override { return ""; }

  std::vector<Recorded> recorded() {
    std::lock_guard<std::mutex> lock(mu_);
    return recorded_;
  }
  Clock::time_point last_deadline() {
    std::lock_guard<std::mutex> lock(mu_);
    return last_deadline_;
  }

 private:
  static void check_model(const ModelSpec& spec) {
    if (spec.name != "half_plus_two") {
      throw_error(ErrorCode::kNotFound, "Could not find any versions of model ", spec.name);
    }
  }
  static int64_t version_of(const ModelSpec& spec) {
    check_model(spec);
    TERN_CHECK_ARG(!(spec.version && spec.label), "both version and label");
    if (spec.version) return *spec.version;
    if (spec.label) {
      if (*spec.label == "stable") return 1;
      if (*spec.label == "canary") return 2;
      throw_error(ErrorCode::kInvalidArgument,
                  "Unrecognized servable version label: ", *spec.label);
    }
    return 2;
  }

  std::map<int64_t, ServablePtr> versions_;
  std::mutex mu_;
  std::vector<Recorded> recorded_;
  Clock::time_point last_deadline_;
};

// --- requests ---

tfs::PredictRequest predict_request(std::vector<float> x, std::string signature = "") {
  tfs::PredictRequest r;
  r.mutable_model_spec()->set_name("half_plus_two");
  if (!signature.empty()) r.mutable_model_spec()->set_signature_name(signature);
  tensorflow::TensorProto& t = (*r.mutable_inputs())["x"];
  t.set_dtype(tensorflow::DT_FLOAT);
  t.mutable_tensor_shape()->add_dim()->set_size(static_cast<int64_t>(x.size()));
  for (float v : x) t.add_float_val(v);
  return r;
}

std::vector<float> floats(const tensorflow::TensorProto& t) {
  return {t.float_val().begin(), t.float_val().end()};
}

class GrpcServerTest : public ::testing::Test {
 protected:
  void SetUp() override { start({}); }

  void start(GrpcOptions options) {
    server_.reset();
    options.host = "127.0.0.1";
    server_ = std::make_unique<GrpcServer>(backend_, options);
    server_->start();
    ASSERT_GT(server_->port(), 0);
    channel_ = grpc::CreateChannel("127.0.0.1:" + std::to_string(server_->port()),
                                   grpc::InsecureChannelCredentials());
    prediction_ = tfs::PredictionService::NewStub(channel_);
    model_ = tfs::ModelService::NewStub(channel_);
  }

  // A context with a 10 s deadline: no test hangs on a server bug.
  static std::unique_ptr<grpc::ClientContext> context(milliseconds deadline = milliseconds(10000)) {
    auto c = std::make_unique<grpc::ClientContext>();
    c->set_deadline(std::chrono::system_clock::now() + deadline);
    return c;
  }

  grpc::Status predict(const tfs::PredictRequest& request, tfs::PredictResponse* response) {
    return prediction_->Predict(context().get(), request, response);
  }

  // Expects `request` to fail with `code` and a message containing `part`.
  void expect_predict_error(const tfs::PredictRequest& request, grpc::StatusCode code,
                            const std::string& part) {
    tfs::PredictResponse response;
    const grpc::Status s = predict(request, &response);
    EXPECT_EQ(s.error_code(), code) << s.error_message();
    EXPECT_NE(s.error_message().find(part), std::string::npos) << s.error_message();
  }

  TestBackend backend_;
  std::unique_ptr<GrpcServer> server_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<tfs::PredictionService::Stub> prediction_;
  std::unique_ptr<tfs::ModelService::Stub> model_;
};

// --- Predict ---

TEST_F(GrpcServerTest, PredictWithFloatValRunsTheLatestVersion) {
  tfs::PredictResponse response;
  ASSERT_TRUE(predict(predict_request({1, 2, 5}), &response).ok());
  EXPECT_EQ(response.model_spec().name(), "half_plus_two");
  EXPECT_EQ(response.model_spec().version().value(), 2);
  EXPECT_EQ(response.model_spec().signature_name(), "serving_default");
  ASSERT_EQ(response.outputs().size(), 2u);
  const tensorflow::TensorProto& y = response.outputs().at("y");
  EXPECT_EQ(y.dtype(), tensorflow::DT_FLOAT);
  ASSERT_EQ(y.tensor_shape().dim_size(), 1);
  EXPECT_EQ(y.tensor_shape().dim(0).size(), 3);
  EXPECT_TRUE(y.tensor_content().empty());  // typed fields, as TF Serving answers
  EXPECT_EQ(floats(y), (std::vector<float>{3.5f, 4.f, 5.5f}));
  EXPECT_EQ(floats(response.outputs().at("doubled")), (std::vector<float>{2, 4, 10}));
}

TEST_F(GrpcServerTest, PredictWithTensorContentAndAVersion) {
  tfs::PredictRequest r = predict_request({});
  r.mutable_model_spec()->mutable_version()->set_value(1);
  tensorflow::TensorProto& x = (*r.mutable_inputs())["x"];
  x.mutable_tensor_shape()->mutable_dim(0)->set_size(3);
  const float values[] = {1, 2, 5};
  x.set_tensor_content(std::string(reinterpret_cast<const char*>(values), sizeof(values)));
  tfs::PredictResponse response;
  ASSERT_TRUE(predict(r, &response).ok());
  EXPECT_EQ(response.model_spec().version().value(), 1);
  EXPECT_EQ(floats(response.outputs().at("y")), (std::vector<float>{2.5f, 3.f, 4.5f}));
}

TEST_F(GrpcServerTest, PredictByLabelAndBroadcastValue) {
  tfs::PredictRequest r = predict_request({4});
  r.mutable_model_spec()->set_version_label("stable");
  (*r.mutable_inputs())["x"].mutable_tensor_shape()->mutable_dim(0)->set_size(3);
  tfs::PredictResponse response;
  ASSERT_TRUE(predict(r, &response).ok());
  EXPECT_EQ(response.model_spec().version().value(), 1);
  EXPECT_EQ(floats(response.outputs().at("y")), (std::vector<float>{4, 4, 4}));
}

TEST_F(GrpcServerTest, OutputFilterReturnsOnlyTheNamedOutputs) {
  tfs::PredictRequest r = predict_request({2});
  r.add_output_filter("doubled");
  tfs::PredictResponse response;
  ASSERT_TRUE(predict(r, &response).ok());
  ASSERT_EQ(response.outputs().size(), 1u);
  EXPECT_EQ(floats(response.outputs().at("doubled")), (std::vector<float>{4}));

  r.add_output_filter("nope");
  expect_predict_error(r, grpc::StatusCode::INVALID_ARGUMENT, "'nope'");
  tfs::PredictRequest twice = predict_request({2});
  twice.add_output_filter("y");
  twice.add_output_filter("y");
  expect_predict_error(twice, grpc::StatusCode::INVALID_ARGUMENT, "twice");
}

TEST_F(GrpcServerTest, StringsTravelInStringVal) {
  tfs::PredictRequest r;
  r.mutable_model_spec()->set_name("half_plus_two");
  r.mutable_model_spec()->set_signature_name("strings");
  tensorflow::TensorProto& s = (*r.mutable_inputs())["s"];
  s.set_dtype(tensorflow::DT_STRING);
  s.mutable_tensor_shape()->add_dim()->set_size(2);
  s.add_string_val("abc");
  s.add_string_val(std::string("\xff\x00", 2));
  tfs::PredictResponse response;
  ASSERT_TRUE(predict(r, &response).ok());
  const tensorflow::TensorProto& length = response.outputs().at("length");
  EXPECT_EQ(length.dtype(), tensorflow::DT_INT64);
  EXPECT_EQ(std::vector<int64_t>(length.int64_val().begin(), length.int64_val().end()),
            (std::vector<int64_t>{3, 2}));
  const tensorflow::TensorProto& echo = response.outputs().at("echo");
  ASSERT_EQ(echo.string_val_size(), 2);
  EXPECT_EQ(echo.string_val(1), std::string("\xff\x00", 2));
}

TEST_F(GrpcServerTest, PredictErrorsCarryTheirCodesAndNameTheCulprit) {
  tfs::PredictRequest unknown_model = predict_request({1});
  unknown_model.mutable_model_spec()->set_name("nope");
  expect_predict_error(unknown_model, grpc::StatusCode::NOT_FOUND, "nope");

  tfs::PredictRequest unknown_version = predict_request({1});
  unknown_version.mutable_model_spec()->mutable_version()->set_value(7);
  expect_predict_error(unknown_version, grpc::StatusCode::NOT_FOUND, "7");

  tfs::PredictRequest unknown_label = predict_request({1});
  unknown_label.mutable_model_spec()->set_version_label("beta");
  expect_predict_error(unknown_label, grpc::StatusCode::INVALID_ARGUMENT, "beta");

  expect_predict_error(predict_request({1}, "nope"), grpc::StatusCode::FAILED_PRECONDITION,
                       "\"nope\" not found");

  tfs::PredictRequest bad_dtype = predict_request({});
  tensorflow::TensorProto& x = (*bad_dtype.mutable_inputs())["x"];
  x.set_dtype(tensorflow::DT_INT32);
  x.mutable_tensor_shape()->mutable_dim(0)->set_size(1);
  x.add_int_val(3);
  expect_predict_error(bad_dtype, grpc::StatusCode::INVALID_ARGUMENT,
                       "input 'x' is DT_INT32 but signature 'serving_default' expects DT_FLOAT");

  tfs::PredictRequest bad_rank = predict_request({1, 2});
  (*bad_rank.mutable_inputs())["x"].mutable_tensor_shape()->add_dim()->set_size(1);
  expect_predict_error(bad_rank, grpc::StatusCode::INVALID_ARGUMENT, "input 'x' has shape [2,1]");

  tfs::PredictRequest missing = predict_request({1});
  missing.mutable_inputs()->clear();
  expect_predict_error(missing, grpc::StatusCode::INVALID_ARGUMENT, "input 'x'");

  tfs::PredictRequest extra = predict_request({1});
  (*extra.mutable_inputs())["z"] = extra.inputs().at("x");
  expect_predict_error(extra, grpc::StatusCode::INVALID_ARGUMENT, "input 'z'");

  tfs::PredictRequest short_content = predict_request({});
  (*short_content.mutable_inputs())["x"].set_tensor_content("abc");
  (*short_content.mutable_inputs())["x"].mutable_tensor_shape()->mutable_dim(0)->set_size(1);
  expect_predict_error(short_content, grpc::StatusCode::INVALID_ARGUMENT, "tensor_content");

  tfs::PredictRequest no_spec = predict_request({1});
  no_spec.clear_model_spec();
  expect_predict_error(no_spec, grpc::StatusCode::INVALID_ARGUMENT, "model_spec");
}

TEST_F(GrpcServerTest, EveryRpcIsRecorded) {
  tfs::PredictResponse response;
  ASSERT_TRUE(predict(predict_request({1}), &response).ok());
  tfs::PredictRequest bad = predict_request({1});
  bad.mutable_model_spec()->set_name("nope");
  EXPECT_FALSE(predict(bad, &response).ok());
  tfs::GetModelStatusRequest status;
  status.mutable_model_spec()->set_name("half_plus_two");
  tfs::GetModelStatusResponse status_response;
  ASSERT_TRUE(model_->GetModelStatus(context().get(), status, &status_response).ok());

  const std::vector<Recorded> rec = backend_.recorded();
  ASSERT_EQ(rec.size(), 3u);
  EXPECT_EQ(rec[0].info.model_name, "half_plus_two");
  EXPECT_EQ(rec[0].info.version, 2);
  EXPECT_EQ(rec[0].info.api, "Predict");
  EXPECT_EQ(rec[0].info.entrypoint, "GRPC");
  EXPECT_FALSE(rec[0].code.has_value());
  EXPECT_EQ(rec[1].info.model_name, "nope");
  EXPECT_EQ(rec[1].info.version, -1);
  EXPECT_EQ(rec[1].code, ErrorCode::kNotFound);
  EXPECT_EQ(rec[2].info.api, "GetModelStatus");
  EXPECT_FALSE(rec[2].code.has_value());
}

// --- deadlines and lifecycle ---

TEST_F(GrpcServerTest, DeadlineIsTheEarlierOfClientAndTimeout) {
  // No client deadline shorter than the server's: the server's timeout_ms (100) cuts the slow
  // signature (300 ms).
  start({.timeout_ms = 100});
  tfs::PredictResponse response;
  const auto before = Clock::now();
  grpc::Status s = predict(predict_request({1}, "slow"), &response);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED) << s.error_message();
  // now + 100 ms on the server (a little after `before`), far from the 30 s default.
  EXPECT_GE(backend_.last_deadline() - before, milliseconds(100));
  EXPECT_LE(backend_.last_deadline() - before, milliseconds(1000));

  // A client deadline shorter than the server's 30 s reaches the backend.
  start({});
  const auto before2 = Clock::now();
  s = prediction_->Predict(context(milliseconds(150)).get(), predict_request({1}, "slow"),
                           &response);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
  EXPECT_LE(backend_.last_deadline() - before2, milliseconds(1000));
}

TEST_F(GrpcServerTest, StopLetsInFlightRpcsFinish) {
  std::promise<grpc::Status> done;
  std::thread client([&] {
    tfs::PredictResponse response;
    done.set_value(predict(predict_request({1}, "slow"), &response));
  });
  std::this_thread::sleep_for(milliseconds(100));  // the slow RPC (300 ms) is running
  server_->stop();
  client.join();
  const grpc::Status s = done.get_future().get();
  EXPECT_TRUE(s.ok()) << s.error_message();
  tfs::PredictResponse response;
  EXPECT_EQ(prediction_->Predict(context(milliseconds(500)).get(), predict_request({1}), &response)
                .error_code(),
            grpc::StatusCode::UNAVAILABLE);
  server_->stop();  // twice is fine
}

TEST_F(GrpcServerTest, APortInUseIsUnavailableNamingIt) {
  GrpcServer second(backend_, {.host = "127.0.0.1", .port = server_->port()});
  try {
    second.start();
    FAIL() << "bound a port in use";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnavailable);
    EXPECT_NE(e.message().find("127.0.0.1:" + std::to_string(server_->port())), std::string::npos)
        << e.message();
  }
}

TEST_F(GrpcServerTest, MessagesOverTheLimitAreRefused) {
  start({.max_message_bytes = 1024});
  tfs::PredictResponse response;
  EXPECT_EQ(predict(predict_request(std::vector<float>(1000, 1.f)), &response).error_code(),
            grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_TRUE(predict(predict_request({1}), &response).ok());
}

// --- GetModelStatus ---

TEST_F(GrpcServerTest, GetModelStatusListsVersionsWithTheirErrors) {
  tfs::GetModelStatusRequest request;
  request.mutable_model_spec()->set_name("half_plus_two");
  tfs::GetModelStatusResponse response;
  ASSERT_TRUE(model_->GetModelStatus(context().get(), request, &response).ok());
  ASSERT_EQ(response.model_version_status_size(), 3);
  EXPECT_EQ(response.model_version_status(0).version(), 1);
  EXPECT_EQ(response.model_version_status(0).state(), tfs::ModelVersionStatus::AVAILABLE);
  EXPECT_EQ(response.model_version_status(0).status().error_code(), tensorflow::error::OK);
  const tfs::ModelVersionStatus& failed = response.model_version_status(2);
  EXPECT_EQ(failed.state(), tfs::ModelVersionStatus::END);
  EXPECT_EQ(failed.status().error_code(), tensorflow::error::DATA_LOSS);
  EXPECT_EQ(failed.status().error_message(), "weights.safetensors: truncated");

  request.mutable_model_spec()->mutable_version()->set_value(2);
  response.Clear();
  ASSERT_TRUE(model_->GetModelStatus(context().get(), request, &response).ok());
  ASSERT_EQ(response.model_version_status_size(), 1);
  EXPECT_EQ(response.model_version_status(0).version(), 2);

  request.mutable_model_spec()->set_version_label("stable");
  response.Clear();
  ASSERT_TRUE(model_->GetModelStatus(context().get(), request, &response).ok());
  ASSERT_EQ(response.model_version_status_size(), 1);
  EXPECT_EQ(response.model_version_status(0).version(), 1);

  request.mutable_model_spec()->set_name("nope");
  EXPECT_EQ(model_->GetModelStatus(context().get(), request, &response).error_code(),
            grpc::StatusCode::NOT_FOUND);
  request.mutable_model_spec()->set_name("");
  const grpc::Status s = model_->GetModelStatus(context().get(), request, &response);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(s.error_message().find("Missing model name"), std::string::npos);
}

// --- GetModelMetadata ---

TEST_F(GrpcServerTest, GetModelMetadataPacksTheSignatureDefMap) {
  tfs::GetModelMetadataRequest request;
  request.mutable_model_spec()->set_name("half_plus_two");
  request.add_metadata_field("signature_def");
  tfs::GetModelMetadataResponse response;
  ASSERT_TRUE(prediction_->GetModelMetadata(context().get(), request, &response).ok());
  EXPECT_EQ(response.model_spec().name(), "half_plus_two");
  EXPECT_EQ(response.model_spec().version().value(), 2);
  ASSERT_EQ(response.metadata().count("signature_def"), 1u);
  const google::protobuf::Any& any = response.metadata().at("signature_def");
  EXPECT_EQ(any.type_url(), "type.googleapis.com/tensorflow.serving.SignatureDefMap");
  tfs::SignatureDefMap defs;
  ASSERT_TRUE(any.UnpackTo(&defs));
  ASSERT_EQ(defs.signature_def().size(), 3u);
  const tensorflow::SignatureDef& def = defs.signature_def().at("serving_default");
  EXPECT_EQ(def.method_name(), "tensorflow/serving/predict");
  const tensorflow::TensorInfo& x = def.inputs().at("x");
  EXPECT_EQ(x.name(), "x:0");
  EXPECT_EQ(x.dtype(), tensorflow::DT_FLOAT);
  ASSERT_EQ(x.tensor_shape().dim_size(), 1);
  EXPECT_EQ(x.tensor_shape().dim(0).size(), -1);
  EXPECT_EQ(def.outputs().size(), 2u);
  EXPECT_EQ(defs.signature_def().at("strings").inputs().at("s").dtype(), tensorflow::DT_STRING);
}

TEST_F(GrpcServerTest, GetModelMetadataRefusesOtherFields) {
  tfs::GetModelMetadataRequest request;
  request.mutable_model_spec()->set_name("half_plus_two");
  tfs::GetModelMetadataResponse response;
  grpc::Status s = prediction_->GetModelMetadata(context().get(), request, &response);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(s.error_message().find("metadata_field"), std::string::npos);

  request.add_metadata_field("signature_def");
  request.add_metadata_field("graph_def");
  s = prediction_->GetModelMetadata(context().get(), request, &response);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(s.error_message().find("graph_def"), std::string::npos);

  request.clear_metadata_field();
  request.add_metadata_field("signature_def");
  request.mutable_model_spec()->set_name("nope");
  EXPECT_EQ(prediction_->GetModelMetadata(context().get(), request, &response).error_code(),
            grpc::StatusCode::NOT_FOUND);
}

// --- the wire, by hand ---

// Sends `request` bytes to `method` with the generic stub; returns the status and response bytes.
grpc::Status call_raw(const std::shared_ptr<grpc::Channel>& channel, const std::string& method,
                      const std::string& request, std::string* response) {
  grpc::GenericStub stub(channel);
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + milliseconds(10000));
  grpc::Slice slice(request);
  grpc::ByteBuffer in(&slice, 1), out;
  std::promise<grpc::Status> done;
  stub.UnaryCall(&ctx, method, grpc::StubOptions(), &in, &out,
                 [&](grpc::Status s) { done.set_value(std::move(s)); });
  grpc::Status status = done.get_future().get();
  if (status.ok()) {
    std::vector<grpc::Slice> slices;
    EXPECT_TRUE(out.Dump(&slices).ok());
    response->clear();
    for (const grpc::Slice& s : slices) {
      response->append(reinterpret_cast<const char*>(s.begin()), s.size());
    }
  }
  return status;
}

TEST_F(GrpcServerTest, HandEncodedPredictRequestInteroperates) {
  using format::ProtoField;
  using format::ProtoReader;
  using format::ProtoWriter;
  // tensorflow.serving.PredictRequest from the public field numbers.
  ProtoWriter version;
  version.add_int64(1, 1);  // Int64Value.value
  ProtoWriter spec;
  spec.add_bytes(1, "half_plus_two");  // name
  spec.add_message(2, version);        // version
  spec.add_bytes(3, "serving_default");
  ProtoWriter dim;
  dim.add_int64(1, 2);  // Dim.size
  ProtoWriter shape;
  shape.add_message(2, dim);  // TensorShapeProto.dim
  const float x[] = {4, 6};
  ProtoWriter tensor;
  tensor.add_varint(1, 1);       // dtype DT_FLOAT
  tensor.add_message(2, shape);  // tensor_shape
  tensor.add_bytes(5, std::string_view(reinterpret_cast<const char*>(x), sizeof(x)));  // packed
  ProtoWriter entry;
  entry.add_bytes(1, "x");  // map key
  entry.add_message(2, tensor);
  ProtoWriter request;
  request.add_message(1, spec);   // model_spec
  request.add_message(2, entry);  // inputs
  request.add_bytes(3, "y");      // output_filter

  std::string bytes;
  const grpc::Status s =
      call_raw(channel_, "/tensorflow.serving.PredictionService/Predict", request.bytes(), &bytes);
  ASSERT_TRUE(s.ok()) << s.error_message();

  // tensorflow.serving.PredictResponse: outputs = 1 (map entries), model_spec = 2.
  ProtoReader response(bytes, 0, "PredictResponse");
  ProtoField f;
  std::map<std::string, std::vector<float>> outputs;
  std::string name, signature;
  int64_t version_value = -1;
  while (response.next(f)) {
    if (f.number == 1) {
      ProtoReader e = response.nested(f);
      std::string key;
      std::vector<float> values;
      ProtoField g;
      while (e.next(g)) {
        if (g.number == 1) key = std::string(g.payload);
        if (g.number != 2) continue;
        ProtoReader t = e.nested(g);
        ProtoField h;
        while (t.next(h)) {
          if (h.number == 1) {
            EXPECT_EQ(h.value, 1u);  // DT_FLOAT
          }
          if (h.number == 5 && h.type == format::WireType::kLengthDelimited) {
            ASSERT_EQ(h.payload.size() % 4, 0u);
            for (size_t i = 0; i < h.payload.size(); i += 4) {
              float v;
              std::memcpy(&v, h.payload.data() + i, 4);
              values.push_back(v);
            }
          } else if (h.number == 5) {
            values.push_back(h.as_float());
          }
        }
      }
      outputs[key] = values;
    } else if (f.number == 2) {
      ProtoReader m = response.nested(f);
      ProtoField g;
      while (m.next(g)) {
        if (g.number == 1) name = std::string(g.payload);
        if (g.number == 3) signature = std::string(g.payload);
        if (g.number == 2) {
          ProtoReader v = m.nested(g);
          ProtoField h;
          while (v.next(h)) {
            if (h.number == 1) version_value = static_cast<int64_t>(h.value);
          }
        }
      }
    }
  }
  ASSERT_EQ(outputs.size(), 1u);                            // output_filter honoured
  EXPECT_EQ(outputs["y"], (std::vector<float>{4.f, 5.f}));  // version 1: 0.5x + 2
  EXPECT_EQ(name, "half_plus_two");
  EXPECT_EQ(signature, "serving_default");
  EXPECT_EQ(version_value, 1);
}

TEST_F(GrpcServerTest, HandEncodedStatusRequestAndMethodNames) {
  format::ProtoWriter spec;
  spec.add_bytes(1, "half_plus_two");
  format::ProtoWriter request;
  request.add_message(1, spec);
  std::string bytes;
  ASSERT_TRUE(
      call_raw(channel_, "/tensorflow.serving.ModelService/GetModelStatus", request.bytes(), &bytes)
          .ok());
  // GetModelStatusResponse.model_version_status = 1: {version = 1, state = 2, status = 3}.
  format::ProtoReader response(bytes, 0, "GetModelStatusResponse");
  format::ProtoField f;
  std::vector<std::pair<int64_t, uint64_t>> versions;
  while (response.next(f)) {
    ASSERT_EQ(f.number, 1u);
    format::ProtoReader v = response.nested(f);
    format::ProtoField g;
    int64_t version = 0;
    uint64_t state = 0;
    while (v.next(g)) {
      if (g.number == 1) version = static_cast<int64_t>(g.value);
      if (g.number == 2) state = g.value;
    }
    versions.emplace_back(version, state);
  }
  EXPECT_EQ(versions, (std::vector<std::pair<int64_t, uint64_t>>{{1, 30}, {2, 30}, {3, 50}}));

  // GetModelMetadata lives on PredictionService, not ModelService; the other upstream methods
  // answer UNIMPLEMENTED.
  EXPECT_EQ(call_raw(channel_, "/tensorflow.serving.ModelService/GetModelMetadata", "", &bytes)
                .error_code(),
            grpc::StatusCode::UNIMPLEMENTED);
  EXPECT_EQ(
      call_raw(channel_, "/tensorflow.serving.PredictionService/Classify", "", &bytes).error_code(),
      grpc::StatusCode::UNIMPLEMENTED);
}

}  // namespace
}  // namespace tern::serve
