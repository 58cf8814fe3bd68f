// The REST JSON codec against the two Debian JSON libraries, on TF Serving-shaped bodies: parse a
// {"instances": [[784 floats] x B]} body into a float tensor (B = 64 and 1), write a 64 x 10 float
// "predictions" response. tern's codec (tern/serve/json_tensor.h) against nlohmann-json (DOM) and
// simdjson (On-Demand); each also gets {"instances": [NaN]} to show whether it reads TF Serving's
// NaN / Infinity tokens at all. Median of repeated runs; results in docs/serving_json.md.
//
//   ninja -C build json_codec_bench && build/bench/json_codec_bench
#include <simdjson.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "tern/serve/json_tensor.h"

namespace {

using namespace tern::serve;

std::string make_body(int batch, int width) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(0.0f, 1.0f);
  std::string s = R"({"instances": [)";
  char buf[32];
  for (int b = 0; b < batch; ++b) {
    s += b ? ",[" : "[";
    for (int i = 0; i < width; ++i) {
      std::snprintf(buf, sizeof(buf), "%s%.7g", i ? "," : "", dist(rng));
      s += buf;
    }
    s += "]";
  }
  return s + "]}";
}

double median_us(int reps, const std::function<void()>& fn) {
  std::vector<double> t;
  for (int r = 0; r < reps; ++r) {
    auto start = std::chrono::steady_clock::now();
    fn();
    t.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start)
                    .count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

volatile float g_sink;

void parse_tern(const std::string& body, const SignatureMap& sigs) {
  JsonPredictRequest req = parse_predict_request(body, sigs);
  g_sink = req.inputs.at("x").numbers.data<float>()[0];
}

void parse_nlohmann(const std::string& body) {
  nlohmann::json doc = nlohmann::json::parse(body);
  const auto& rows = doc.at("instances");
  std::vector<float> out;
  out.reserve(rows.size() * rows.at(0).size());
  for (const auto& row : rows) {
    for (const auto& v : row) out.push_back(v.get<float>());
  }
  g_sink = out[0];
}

void parse_simdjson(simdjson::ondemand::parser& parser, const simdjson::padded_string& body) {
  simdjson::ondemand::document doc = parser.iterate(body);
  std::vector<float> out;
  for (auto row : doc["instances"].get_array()) {
    for (auto v : row.get_array()) out.push_back(static_cast<float>(v.get_double().value()));
  }
  g_sink = out[0];
}

}  // namespace

int main() {
  Signature sig;
  sig.inputs["x"] = TensorSpec{WireDType::kFloat, {-1, 784}, false, "x:0"};
  const SignatureMap sigs = {{"serving_default", sig}};
  simdjson::ondemand::parser parser;

  std::printf("%-34s %12s %12s %12s\n", "case", "tern us", "nlohmann us", "simdjson us");
  for (int batch : {64, 1}) {
    const std::string body = make_body(batch, 784);
    const simdjson::padded_string padded(body);
    const int reps = batch == 64 ? 50 : 2000;
    double t = median_us(reps, [&] { parse_tern(body, sigs); });
    double n = median_us(reps, [&] { parse_nlohmann(body); });
    double s = median_us(reps, [&] { parse_simdjson(parser, padded); });
    std::printf("parse %dx784 instances (%zu KB)%*s %12.1f %12.1f %12.1f\n", batch,
                body.size() / 1024, batch == 64 ? 1 : 3, "", t, n, s);
  }

  std::vector<float> values(640);
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> dist(-10.0f, 10.0f);
  for (float& v : values) v = dist(rng);
  TensorMap outputs;
  outputs["y"] = TensorValue::from_tensor(tern::Tensor::from_vector(tern::Shape{64, 10}, values));
  double t = median_us(2000, [&] {
    g_sink = static_cast<float>(predict_response_json(outputs, JsonFormat::kRow).size());
  });
  double n = median_us(2000, [&] {
    nlohmann::json rows = nlohmann::json::array();
    for (int b = 0; b < 64; ++b) {
      nlohmann::json row = nlohmann::json::array();
      for (int i = 0; i < 10; ++i) row.push_back(values[static_cast<size_t>(b * 10 + i)]);
      rows.push_back(std::move(row));
    }
    nlohmann::json doc = {{"predictions", std::move(rows)}};
    g_sink = static_cast<float>(doc.dump().size());
  });
  std::printf("%-34s %12.1f %12.1f %12s\n", "write 64x10 predictions", t, n, "(no writer)");

  const std::string nan_body = R"({"instances": [NaN, Infinity, -Infinity]})";
  bool tern_ok = true, nl_ok = true, sj_ok = true;
  try {
    Signature one;
    one.inputs["x"] = TensorSpec{WireDType::kFloat, {-1}, false, "x:0"};
    parse_predict_request(nan_body, {{"serving_default", one}});
  } catch (...) {
    tern_ok = false;
  }
  try {
    nlohmann::json doc = nlohmann::json::parse(nan_body);
    nl_ok = doc.is_object();
  } catch (...) {
    nl_ok = false;
  }
  {
    simdjson::padded_string p(nan_body);
    simdjson::ondemand::document doc = parser.iterate(p);
    for (auto v : doc["instances"].get_array()) {
      if (v.get_double().error()) sj_ok = false;
    }
  }
  std::printf("%-34s %12s %12s %12s\n", "reads NaN / Infinity tokens", tern_ok ? "yes" : "no",
              nl_ok ? "yes" : "no", sj_ok ? "yes" : "no");
  return 0;
}
