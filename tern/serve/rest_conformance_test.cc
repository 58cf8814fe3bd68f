// Conformance of the REST front end with TF Serving's REST API. Expected bodies are written from
// /work/shared/reference/SERVING.md (section cited per test), not from tern's output.
//
// The server under test comes from base_url(): by default a RestServer on 127.0.0.1 over the
// in-memory TestBackend (rest_test_backend.h); with TERN_REST_CONFORMANCE_URL=http://host:port
// the suite talks to that server instead (which must serve the same models); tests that need the
// in-process backend (failure injection, small limits) are skipped then. CTest
// rest_conformance_tern_serve runs it so against the built `tern serve` serving
// rest_conformance_models.h's model directories (tests/serve/).
#include <httplib.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <future>
#include <thread>

#include "tern/serve/rest_server.h"
#include "tern/serve/rest_test_backend.h"

namespace tern::serve {
namespace {

using testing::TestBackend;

// Removes whitespace outside strings, so expectations can be written as the docs print them.
std::string compact(std::string_view json) {
  std::string out;
  bool in_string = false;
  for (size_t i = 0; i < json.size(); ++i) {
    char c = json[i];
    if (in_string) {
      out += c;
      if (c == '\\' && i + 1 < json.size()) {
        out += json[++i];
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
      out += c;
    } else if (c != ' ' && c != '\n' && c != '\t' && c != '\r') {
      out += c;
    }
  }
  return out;
}

struct Local {
  TestBackend backend;
  std::unique_ptr<RestServer> server;
};

Local& local() {
  static Local* l = [] {
    auto* p = new Local;
    RestOptions opt;
    opt.host = "127.0.0.1";
    opt.num_threads = 4;
    opt.metrics_path = "/monitoring/prometheus/metrics";
    p->server = std::make_unique<RestServer>(p->backend, opt);
    p->server->start();
    return p;
  }();
  return *l;
}

bool external() {
  return std::getenv("TERN_REST_CONFORMANCE_URL") != nullptr;
}

// The server under test.
std::string base_url() {
  if (const char* url = std::getenv("TERN_REST_CONFORMANCE_URL")) return url;
  return "http://127.0.0.1:" + std::to_string(local().server->port());
}

struct Reply {
  int status = 0;
  std::string body;
  std::string content_type;
  httplib::Headers headers;
};

Reply call(httplib::Client& cli, const std::string& method, const std::string& path,
           const std::string& body = "", const httplib::Headers& headers = {}) {
  cli.set_read_timeout(20, 0);
  httplib::Result r = method == "GET"    ? cli.Get(path.c_str(), headers)
                      : method == "POST" ? cli.Post(path.c_str(), headers, body, "application/json")
                      : method == "PUT"  ? cli.Put(path.c_str(), headers, body, "application/json")
                                         : cli.Options(path.c_str(), headers);
  if (!r) return {-1, "transport error " + httplib::to_string(r.error()), "", {}};
  return {r->status, r->body, r->get_header_value("Content-Type"), r->headers};
}

Reply call(const std::string& method, const std::string& path, const std::string& body = "",
           const httplib::Headers& headers = {}) {
  httplib::Client cli(base_url());
  return call(cli, method, path, body, headers);
}

Reply post(const std::string& path, const std::string& body) {
  return call("POST", path, body);
}
Reply get(const std::string& path) {
  return call("GET", path);
}

// {"error": "<message containing `part`>"} with `status` and application/json.
void expect_error(const Reply& r, int status, const std::string& part) {
  EXPECT_EQ(r.status, status) << r.body;
  EXPECT_EQ(r.content_type, "application/json");
  EXPECT_EQ(r.body.rfind("{\"error\":", 0), 0u) << r.body;
  EXPECT_NE(r.body.find(part), std::string::npos) << "expected '" << part << "' in " << r.body;
}

void expect_json(const Reply& r, const std::string& expected) {
  EXPECT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.content_type, "application/json");
  EXPECT_EQ(compact(r.body), compact(expected));
}

constexpr const char* kPredict = "/v1/models/half_plus_two:predict";

// --- status and metadata (section 1.5) ---

TEST(RestConformance, StatusListsEveryTrackedVersionWithVersionAsString) {
  // A version that failed to load is tracked in state END with its error (1.5). Its message names
  // the model directory (a temp folder for a real server), so only its tail is fixed here.
  Reply r = get("/v1/models/half_plus_two");
  EXPECT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.content_type, "application/json");
  const std::string body = compact(r.body);
  // Newest first (ServableStateMonitor's version map is ordered by std::greater).
  EXPECT_EQ(body.rfind(compact(R"({ "model_version_status": [
      { "version": "3", "state": "END",
        "status": { "error_code": "DATA_LOSS", "error_message": ")"),
                       0),
            0u)
      << body;
  const std::string message =
      "/half_plus_two/3/fingerprint.json: fingerprint mismatch: the files hash to ";
  EXPECT_NE(body.find(message), std::string::npos) << body;
  // (Written compact: the leading quote closes the message.)
  const std::string rest =
      R"("}},{"version":"2","state":"AVAILABLE","status":{"error_code":"OK","error_message":""}},)"
      R"({"version":"1","state":"AVAILABLE","status":{"error_code":"OK","error_message":""}}]})";
  ASSERT_GE(body.size(), rest.size());
  EXPECT_EQ(body.substr(body.size() - rest.size()), rest) << body;
}

TEST(RestConformance, StatusOfOneVersionAndOfALabel) {
  const char* v2 = R"({ "model_version_status": [
      { "version": "2", "state": "AVAILABLE", "status": { "error_code": "OK", "error_message": "" } } ] })";
  expect_json(get("/v1/models/half_plus_two/versions/2"), v2);
  expect_json(get("/v1/models/half_plus_two/labels/canary"), v2);
  expect_json(get("/v1/models/half_plus_two/labels/stable"), R"({ "model_version_status": [
      { "version": "1", "state": "AVAILABLE", "status": { "error_code": "OK", "error_message": "" } } ] })");
}

TEST(RestConformance, StatusErrors) {
  // 1.5: unknown model / version are 404; 1.7: an unknown label is 400.
  expect_error(get("/v1/models/nope"), 404, "Could not find any versions of model nope");
  expect_error(get("/v1/models/half_plus_two/versions/99"), 404,
               "Could not find version 99 of model half_plus_two");
  expect_error(get("/v1/models/half_plus_two/labels/beta"), 400,
               "Unrecognized servable version label: beta");
}

TEST(RestConformance, MetadataHasModelSpecAndDoubledSignatureDef) {
  Reply r = get("/v1/models/half_plus_two/versions/1/metadata");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.content_type, "application/json");
  std::string body = compact(r.body);
  EXPECT_EQ(body.rfind(compact(R"({ "model_spec": {"name": "half_plus_two", "signature_name": "",
      "version": "1"}, "metadata": { "signature_def": { "signature_def": {)"),
                       0),
            0u)
      << body;
  // serving_default as the golden file prints it: size as a string, name "", defaults {}.
  EXPECT_NE(body.find(compact(R"("serving_default": {
      "inputs": {"x": {"dtype": "DT_FLOAT", "tensor_shape": {"dim": [{"size": "-1", "name": ""}],
                       "unknown_rank": false}, "name": "x:0"}},
      "outputs": {"y": {"dtype": "DT_FLOAT", "tensor_shape": {"dim": [{"size": "-1", "name": ""}],
                        "unknown_rank": false}, "name": "y:0"}},
      "method_name": "tensorflow/serving/predict",
      "defaults": {} })")),
            std::string::npos)
      << body;
  EXPECT_NE(body.find(R"("method_name":"tensorflow/serving/classify")"), std::string::npos);
  // Latest when no version is named (1.1): version 2.
  Reply latest = get("/v1/models/half_plus_two/metadata");
  EXPECT_NE(compact(latest.body).find(R"("version":"2")"), std::string::npos) << latest.body;
}

// --- URL grammar (section 1.1) ---

TEST(RestConformance, UrlGrammar) {
  expect_error(get("/v1/models"), 400, "Missing model name in request.");
  expect_error(get("/v1/models/half_plus_two/versions/1/labels/stable"), 400, "Malformed request");
  expect_error(get("/v1/models/half_plus_two:predict"), 400,
               "Malformed request: GET /v1/models/half_plus_two:predict");
  expect_error(post("/v1/models/half_plus_two/metadata", "{}"), 400,
               "Malformed request: POST /v1/models/half_plus_two/metadata");
  // Case-insensitive match, case-sensitive method.
  expect_error(post("/v1/models/half_plus_two:PREDICT", R"({"instances": [1]})"), 400,
               "Malformed request");
  expect_json(post("/V1/MODELS/half_plus_two:predict", R"({"instances": [1.0]})"),
              R"({"predictions": [2.5]})");
  expect_error(call("PUT", kPredict, "{}"), 400, "Malformed request: PUT");
  // Name and label are URL-decoded.
  expect_json(
      post("/v1/models/half%5Fplus%5Ftwo/labels/st%61ble:predict", R"({"instances": [1.0]})"),
      R"({"predictions": [3.5]})");
  expect_error(get("/v1/models/half_plus_two/versions/99999999999999999999"), 400,
               "Failed to convert version");
  // Outside /v1/: 404, not a JSON error.
  EXPECT_EQ(get("/v2/models/half_plus_two").status, 404);
  EXPECT_EQ(post("/predict", "{}").status, 404);
}

// --- predict (sections 1.2, 1.3) ---

TEST(RestConformance, PredictRowAndColumnar) {
  // 1.3 / api_rest.md: half_plus_two on [1.0, 2.0, 5.0].
  expect_json(post(kPredict, R"({"instances": [1.0, 2.0, 5.0]})"),
              R"({"predictions": [2.5, 3.0, 4.5]})");
  expect_json(post(kPredict, R"({"inputs": [1.0, 2.0, 5.0]})"), R"({"outputs": [2.5, 3.0, 4.5]})");
  expect_json(post(kPredict, R"({"signature_name": "serving_default", "instances": [1, 2]})"),
              R"({"predictions": [2.5, 3.0]})");
  // Unknown top-level keys are ignored; instances as single-input objects are accepted.
  expect_json(post(kPredict, R"({"extra": {"x": 1}, "instances": [{"x": 1.0}, {"x": 2.0}]})"),
              R"({"predictions": [2.5, 3.0]})");
}

TEST(RestConformance, PredictPicksTheVersionAndLabel) {
  const char* body = R"({"instances": [1.0]})";
  expect_json(post("/v1/models/half_plus_two/versions/1:predict", body),
              R"({"predictions": [3.5]})");
  expect_json(post("/v1/models/half_plus_two/versions/2:predict", body),
              R"({"predictions": [2.5]})");
  expect_json(post("/v1/models/half_plus_two/labels/stable:predict", body),
              R"({"predictions": [3.5]})");
  expect_json(post("/v1/models/half_plus_two/labels/canary:predict", body),
              R"({"predictions": [2.5]})");
  expect_json(post(kPredict, body), R"({"predictions": [2.5]})");  // latest = 2
  expect_error(post("/v1/models/half_plus_two/versions/7:predict", body), 404,
               "Servable not found for request: Specific(half_plus_two, 7)");
  expect_error(post("/v1/models/nope:predict", body), 404,
               "Servable not found for request: Latest(nope)");
  expect_error(post("/v1/models/half_plus_two/labels/beta:predict", body), 400,
               "Unrecognized servable version label: beta");
}

TEST(RestConformance, FloatFormatting) {
  // 1.3 WriteDecimal: 555557.5 keeps its digits (serving#1332), 3 -> 3.0, NaN / Infinity tokens.
  const std::string v1 = "/v1/models/half_plus_two/versions/2:predict";
  expect_json(post(v1, R"({"instances": [1111111, 2, 0.25]})"),
              R"({"predictions": [555557.5, 3.0, 2.125]})");
  expect_json(post(v1, R"({"instances": [NaN, Infinity, -Infinity]})"),
              R"({"predictions": [NaN, Infinity, -Infinity]})");
  expect_json(post(v1, R"({"instances": [1.7999996e7]})"), R"({"predictions": [9e+06]})");
}

TEST(RestConformance, MultiInputSignatures) {
  // 1.2: objects keyed by every input in row format; an object of inputs in columnar format.
  expect_json(post(kPredict, R"({"signature_name": "two_inputs",
      "instances": [{"a": [1, 2], "b": 3}, {"a": [4.5, 5], "b": 6}]})"),
              R"({"predictions": [{"echo_b": 3, "sum": 6.0}, {"echo_b": 6, "sum": 15.5}]})");
  expect_json(post(kPredict, R"({"signature_name": "two_inputs",
      "inputs": {"a": [[1, 2], [4, 5]], "b": [3, 6], "ignored": true}})"),
              R"({"outputs": {"echo_b": [3, 6], "sum": [6.0, 15.0]}})");
  expect_error(post(kPredict, R"({"signature_name": "two_inputs", "instances": [{"a": [1, 2]}]})"),
               400, "keys must be equal to: a,b");
  expect_error(post(kPredict, R"({"signature_name": "two_inputs", "instances": [[1, 2]]})"), 400,
               "instances is a plain list, but expecting list of objects");
  expect_error(post(kPredict, R"({"signature_name": "two_inputs", "inputs": {"a": [[1, 2]]}})"),
               400, "Missing named input: b in 'inputs' object.");
  expect_error(post(kPredict, R"({"signature_name": "two_inputs", "inputs": [[1, 2]]})"), 400,
               "inputs is a plain value/list, but expecting an object");
}

TEST(RestConformance, BytesAndBase64) {
  // rest_conformance_models.h: a graph cannot compute string outputs, so no real model has this
  // signature.
  if (external()) GTEST_SKIP() << "the bytes signature is the in-process backend's only";
  // 1.2: {"b64": ...} is a value; 1.3: outputs named *_bytes come back as {"b64": ...}.
  expect_json(post(kPredict, R"({"signature_name": "bytes",
      "instances": [{"b64": "aGVsbG8="}, "abc"]})"),
              R"({"predictions": [{"length": 5, "out_bytes": {"b64": "b2xsZWg="}},
                                  {"length": 3, "out_bytes": {"b64": "Y2Jh"}}]})");
  expect_json(post(kPredict, R"({"signature_name": "bytes", "inputs": [{"b64": "AP8="}]})"),
              R"({"outputs": {"length": [2], "out_bytes": [{"b64": "/wA="}]}})");
  // serving#1141: the web-safe alphabet fails.
  expect_error(post(kPredict, R"({"signature_name": "bytes", "instances": [{"b64": "_w-A"}]})"),
               400, "Unable to base64 decode");
  expect_error(post(kPredict, R"({"signature_name": "bytes", "inputs": {"text": [{"b64": 5}]}})"),
               400, "not formatted correctly for base64 data");
}

TEST(RestConformance, DtypesDecideHowValuesAreRead) {
  // 1.2 table: int dtypes reject 1.0, bool rejects 0/1, floats take ints.
  expect_error(post(kPredict, R"({"signature_name": "two_inputs",
      "instances": [{"a": [1, 2], "b": 1.0}]})"),
               400, "is not of expected type: DT_INT64");
  expect_error(post(kPredict, R"({"instances": ["1.0"]})"), 400,
               "Type: String is not of expected type: DT_FLOAT");
  expect_error(post(kPredict, R"({"instances": [true]})"), 400,
               "is not of expected type: DT_FLOAT");
  // 1.2: half is Unimplemented -> 501.
  expect_error(post(kPredict, R"({"signature_name": "half", "instances": [1.0]})"), 501, "DT_HALF");
}

TEST(RestConformance, RequestShapeErrors) {
  expect_error(post(kPredict, R"({"instances": [1.0], "inputs": [1.0]})"), 400,
               "expecting only one of 'inputs' or 'instances'");
  expect_error(post(kPredict, R"({"signature_name": "serving_default"})"), 400,
               "Missing 'inputs' or 'instances' key");
  expect_error(post(kPredict, R"({"instances": []})"), 400, "No values in 'instances' array");
  expect_error(post(kPredict, R"({"signature_name": 5, "instances": [1.0]})"), 400,
               "'signature_name' key must be a string value.");
  expect_error(post(kPredict, R"({"signature_name": "nope", "instances": [1.0]})"), 400,
               R"(Serving signature name: \"nope\" not found in signature def)");
  // Ragged lists (1.2).
  expect_error(post(kPredict, R"({"inputs": [[1, 2], [3]]})"), 400,
               "Encountered list at unexpected size");
  expect_error(post(kPredict, R"({"signature_name": "two_inputs",
      "instances": [{"a": [1, 2], "b": 1}, {"a": [1], "b": 2}]})"),
               400, "Expecting tensor size: 2 but got: 1");
  // A well-formed tensor of the wrong rank: the servable's InvalidArgument.
  expect_error(post(kPredict, R"({"instances": [[1, 2]]})"), 400,
               "input 'x': expected DT_FLOAT[-1], got DT_FLOAT[1,2]");
}

TEST(RestConformance, MalformedJson) {
  expect_error(post(kPredict, R"({"instances": [1.0,)"), 400, "JSON Parse error");
  expect_error(post(kPredict, ""), 400, "JSON Parse error: The document is empty");
  expect_error(post(kPredict, "[1, 2]"), 400, "Is not object");
  expect_error(post(kPredict, R"({"instances": [nan]})"), 400, "JSON Parse error");
  std::string deep(100000, '[');
  expect_error(post(kPredict, R"({"instances": )" + deep), 400, "JSON Parse error");
}

TEST(RestConformance, HugeImpliedShapeIsRejectedWithoutAllocating) {
  // [[1 x 1e6], [], [], ... 1e6 lists]: the first path implies 1e12 elements.
  std::string body = R"({"inputs": [[)";
  for (int i = 0; i < 1000000; ++i) body += i ? ",1" : "1";
  body += "]";
  for (int i = 1; i < 1000000; ++i) body += ",[]";
  body += "]}";
  const auto start = std::chrono::steady_clock::now();
  expect_error(post(kPredict, body), 400, "Encountered list at unexpected size: 0");
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
}

TEST(RestConformance, RowFormatNeedsOutputsWithABatchDimension) {
  // 1.3: a rank-0 output cannot be written in row format; columnar is fine.
  expect_error(post(kPredict, R"({"signature_name": "scalar", "instances": [1.0, 2.0]})"), 400,
               "Tensor name: total has no shape information");
  expect_json(post(kPredict, R"({"signature_name": "scalar", "inputs": [1.0, 2.0]})"),
              R"({"outputs": 3.0})");
}

// --- classify / regress (section 1.4) ---

TEST(RestConformance, ClassifyAndRegress) {
  expect_json(post("/v1/models/half_plus_two:classify",
                   R"({"signature_name": "classify", "examples": [{"x": 0.25}, {"x": 0.75}]})"),
              R"({"results": [[["pos", 0.25], ["neg", 0.75]], [["pos", 0.75], ["neg", 0.25]]]})");
  // Context features go into every example; an example's own feature wins.
  expect_json(post("/v1/models/half_plus_two:classify",
                   R"({"signature_name": "classify", "context": {"x": 0.5},
                       "examples": [{}, {"x": 1.0}]})"),
              R"({"results": [[["pos", 0.5], ["neg", 0.5]], [["pos", 1.0], ["neg", 0.0]]]})");
  // Integers become int64_list features.
  expect_json(post("/v1/models/half_plus_two:regress",
                   R"({"signature_name": "regress", "examples": [{"x": 2.0}, {"x": 4}]})"),
              R"({"results": [3.0, 4.0]})");
}

TEST(RestConformance, ClassifyErrors) {
  expect_error(post("/v1/models/half_plus_two:classify", R"({"examples": [{"x": 1.0}]})"), 400,
               "Expected classification signature method_name");
  expect_error(post("/v1/models/half_plus_two:regress",
                    R"({"signature_name": "classify", "examples": [{"x": 1.0}]})"),
               400, "Expected regression signature method_name");
  expect_error(post("/v1/models/half_plus_two:classify", R"({"signature_name": "classify"})"), 400,
               "'examples' is expected and was not found");
  expect_error(post("/v1/models/half_plus_two:classify",
                    R"({"signature_name": "classify", "examples": []})"),
               400, "'examples' value is an empty array");
  expect_error(post("/v1/models/half_plus_two:classify",
                    R"({"signature_name": "classify", "examples": [{"x": [1, 2.5]}]})"),
               400, "Unexpected element type in feature: x expecting type: int64");
  expect_error(post("/v1/models/half_plus_two:classify",
                    R"({"signature_name": "classify", "examples": [{"x": null}]})"),
               400, "Feature: x has element with unexpected JSON type: Null");
  expect_error(post("/v1/models/half_plus_two:classify",
                    R"({"signature_name": "classify", "examples": [{"x": 18446744073709551615}]})"),
               400, "has uint64 element");
}

// --- transport (sections 1.1, 1.6) ---

TEST(RestConformance, GzipRequestBody) {
  httplib::Client cli(base_url());
  cli.set_compress(true);  // Content-Encoding: gzip
  Reply r = call(cli, "POST", kPredict, R"({"instances": [1.0, 2.0, 5.0]})");
  expect_json(r, R"({"predictions": [2.5, 3.0, 4.5]})");
}

TEST(RestConformance, MetricsEndpoint) {
  if (external()) GTEST_SKIP() << "the metrics text is the in-process backend's";
  Reply r = get("/monitoring/prometheus/metrics");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.content_type.rfind("text/plain", 0), 0u);
  EXPECT_EQ(r.body, local().backend.prometheus_metrics());
}

// --- local-only: the in-process backend and servers with small limits ---

struct ExtraServer {
  explicit ExtraServer(RestOptions opt) {
    opt.host = "127.0.0.1";
    opt.num_threads = 2;
    server = std::make_unique<RestServer>(backend, opt);
    server->start();
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(server->port()); }
  TestBackend backend;
  std::unique_ptr<RestServer> server;
};

TEST(RestServerLocal, EachRequestResolvesOnceAndIsRecorded) {
  if (external()) GTEST_SKIP();
  ExtraServer s({});
  httplib::Client cli(s.url());
  EXPECT_EQ(
      call(cli, "POST", "/v1/models/half_plus_two/labels/stable:predict", R"({"instances": [1.0]})")
          .status,
      200);
  EXPECT_EQ(s.backend.resolves.load(), 1);
  EXPECT_EQ(call(cli, "POST", kPredict, R"({"instances": [true]})").status, 400);
  EXPECT_EQ(call(cli, "GET", "/v1/models/half_plus_two/versions/1/metadata").status, 200);
  auto records = s.backend.records();
  ASSERT_EQ(records.size(), 3u);
  EXPECT_EQ(records[0].info.model_name, "half_plus_two");
  EXPECT_EQ(records[0].info.version, 1);
  EXPECT_EQ(records[0].info.api, "predict");
  EXPECT_EQ(records[0].info.entrypoint, "REST");
  EXPECT_FALSE(records[0].code.has_value());
  EXPECT_EQ(records[1].info.version, 2);
  EXPECT_EQ(records[1].code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(records[2].info.api, "");
  EXPECT_EQ(records[2].info.version, 1);
}

TEST(RestServerLocal, BackendErrorsMapToStatusCodes) {
  if (external()) GTEST_SKIP();
  RestOptions opt;
  opt.timeout_ms = 200;
  ExtraServer s(opt);
  httplib::Client cli(s.url());
  // 1.6: UNAVAILABLE 503 (queue full), DEADLINE_EXCEEDED 504.
  expect_error(call(cli, "POST", "/v1/models/flaky:predict", R"({"instances": [1.0]})"), 503,
               "batch scheduling queue");
  const auto before = Clock::now();
  expect_error(call(cli, "POST", "/v1/models/slow:predict", R"({"instances": [1.0]})"), 504,
               "Deadline exceeded");
  const auto deadline = Clock::time_point(Clock::duration(s.backend.last_deadline_ticks.load()));
  EXPECT_GT(deadline, before + std::chrono::milliseconds(150));
  EXPECT_LT(deadline, before + std::chrono::milliseconds(2000));
}

TEST(RestServerLocal, BodyOverTheCapIs413) {
  if (external()) GTEST_SKIP();
  RestOptions opt;
  opt.max_body_bytes = 1024;
  ExtraServer s(opt);
  std::string body = R"({"instances": [)" + std::string(2000, ' ') + "1.0]}";
  {
    httplib::Client cli(s.url());
    expect_error(call(cli, "POST", kPredict, body), 413, "larger than the limit of 1024 bytes");
  }
  {
    // A gzip body that inflates past the cap stops at the cap.
    httplib::Client cli(s.url());
    cli.set_compress(true);
    expect_error(
        call(cli, "POST", kPredict, R"({"instances": [)" + std::string(1 << 19, ' ') + "1.0]}"),
        413, "larger than the limit");
  }
  {
    // 100 MB: refused by Content-Length, skipped without being held.
    httplib::Client cli(s.url());
    const auto start = std::chrono::steady_clock::now();
    Reply r = call(cli, "POST", kPredict, std::string(100 << 20, ' '));
    expect_error(r, 413, "larger than the limit");
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(15));
  }
  httplib::Client cli(s.url());
  expect_json(call(cli, "POST", kPredict, R"({"instances": [1.0]})"), R"({"predictions": [2.5]})");
}

TEST(RestServerLocal, Cors) {
  if (external()) GTEST_SKIP();
  RestOptions opt;
  opt.enable_cors = true;
  ExtraServer s(opt);
  httplib::Client cli(s.url());
  Reply r = call(cli, "POST", kPredict, R"({"instances": [1.0]})");
  EXPECT_EQ(r.status, 200);
  auto header = [&](const Reply& rep, const char* name) {
    auto it = rep.headers.find(name);
    return it == rep.headers.end() ? std::string() : it->second;
  };
  // 1.1: the three CORS headers.
  EXPECT_EQ(header(r, "Access-Control-Allow-Origin"), "*");
  EXPECT_EQ(header(r, "Access-Control-Allow-Methods"), "POST, GET");
  EXPECT_EQ(header(r, "Access-Control-Allow-Headers"), "Content-Type");
  Reply pre = call(cli, "OPTIONS", kPredict, "", {{"Origin", "https://example.com"}});
  EXPECT_EQ(pre.status, 200);
  EXPECT_EQ(header(pre, "Access-Control-Allow-Origin"), "*");
  EXPECT_EQ(call(cli, "OPTIONS", kPredict).status, 400);
  // Without CORS, no headers.
  Reply plain = post(kPredict, R"({"instances": [1.0]})");
  EXPECT_EQ(header(plain, "Access-Control-Allow-Origin"), "");
}

TEST(RestServerLocal, StopDrainsInFlightRequests) {
  if (external()) GTEST_SKIP();
  ExtraServer s({});
  s.backend.slow_ok_ms = 300;
  auto inflight = std::async(std::launch::async, [&] {
    httplib::Client cli(s.url());
    return call(cli, "POST", "/v1/models/slow:predict", R"({"instances": [1.0]})");
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  s.server->stop();
  Reply r = inflight.get();
  expect_json(r, R"({"predictions": [2.5]})");
  httplib::Client after(s.url());
  after.set_connection_timeout(1, 0);
  EXPECT_FALSE(after.Get("/v1/models/half_plus_two"));
}

TEST(RestServerLocal, BindFailureNamesTheAddress) {
  if (external()) GTEST_SKIP();
  ExtraServer s({});
  TestBackend backend;
  RestOptions opt;
  opt.host = "127.0.0.1";
  opt.port = s.server->port();
  RestServer clash(backend, opt);
  try {
    clash.start();
    FAIL() << "bind to a taken port succeeded";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnavailable);
    EXPECT_NE(e.message().find("127.0.0.1:" + std::to_string(opt.port)), std::string::npos);
  }
}

TEST(RestServerLocal, ManyConcurrentClientsWithFewConnections) {
  if (external()) GTEST_SKIP();
  RestOptions opt;
  opt.max_connections = 2;
  ExtraServer s(opt);
  std::vector<std::future<int>> clients;
  for (int i = 0; i < 16; ++i) {
    clients.push_back(std::async(std::launch::async, [&] {
      httplib::Client cli(s.url());
      Reply r = call(cli, "POST", kPredict, R"({"instances": [1.0]})");
      if (r.status != 200) ADD_FAILURE() << r.body;
      return r.status;
    }));
  }
  for (auto& c : clients) EXPECT_EQ(c.get(), 200);
}

// A kept-alive connection holds its worker (cpp-httplib), so with the default worker count a new
// client is still answered while other clients keep more connections open than there are cores.
TEST(RestServerLocal, ANewClientIsAnsweredWhileKeptAliveConnectionsStayOpen) {
  if (external()) GTEST_SKIP();
  TestBackend backend;
  RestOptions opt;  // default num_threads and max_connections
  opt.host = "127.0.0.1";
  RestServer server(backend, opt);
  server.start();
  const std::string url = "http://127.0.0.1:" + std::to_string(server.port());
  const int held = 4 * static_cast<int>(std::max(1u, std::thread::hardware_concurrency())) + 4;
  std::vector<std::unique_ptr<httplib::Client>> idle;
  for (int i = 0; i < held; ++i) {
    idle.push_back(std::make_unique<httplib::Client>(url));
    idle.back()->set_keep_alive(true);
    Reply r = call(*idle.back(), "POST", kPredict, R"({"instances": [1.0]})");
    ASSERT_EQ(r.status, 200) << r.body;  // the connection stays open and idle
  }
  httplib::Client probe(url);
  const auto start = std::chrono::steady_clock::now();
  Reply r = call(probe, "GET", "/v1/models/half_plus_two");
  EXPECT_EQ(r.status, 200) << r.body;
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
}

}  // namespace
}  // namespace tern::serve
