// A model exported with its transform (tern/transform/test_util.h: UCI Automobile, trained a few
// steps on the transformed data) served by the built `tern serve`, fed the eval split's RAW
// CSV-style rows over REST: strings for categorical columns, numbers for numeric ones, and the
// missing cells as JSON null or as keys left out. The logits equal the in-process outputs
// (serve::load_servable on the same raw features) and the trained model's on the transformed eval
// data, to 1e-6; the columnar `inputs` form gives the same.
#include <httplib.h>

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "tern/serve/model_dir.h"
#include "tern/transform/test_util.h"
#include "tests/serve/serve_process.h"

namespace tern::serve_tests {
namespace {

namespace fs = std::filesystem;
namespace tt = transform::testing;

std::string number_text(const data::Feature& f) {
  if (f.kind == data::FeatureKind::kInt64) return std::to_string(f.int64_list[0]);
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.9g", static_cast<double>(f.float_list[0]));
  return buf;
}

// One JSON object per car; a missing cell is null for even rows and a left-out key for odd ones.
std::string instances_body(const transform::TransformSpec& spec,
                           const std::vector<data::Example>& rows) {
  std::string body = R"({"instances": [)";
  for (size_t i = 0; i < rows.size(); ++i) {
    body += i ? ",{" : "{";
    bool first = true;
    for (const auto& f : spec.raw_features()) {
      auto it = rows[i].features.find(f.name);
      if (it == rows[i].features.end() && i % 2 == 1) continue;
      body += str_cat(first ? "" : ",", nlohmann::json(f.name).dump(), ":");
      first = false;
      if (it == rows[i].features.end()) {
        body += "null";
      } else if (f.kind == transform::RawKind::kNumeric) {
        body += number_text(it->second);
      } else {
        body += nlohmann::json(it->second.bytes_list[0]).dump();
      }
    }
    body += "}";
  }
  return body + "]}";
}

// The same as columns: {"inputs": {"price": [..., null, ...], "make": [...], ...}}.
std::string columnar_body(const transform::TransformSpec& spec,
                          const std::vector<data::Example>& rows) {
  nlohmann::json inputs = nlohmann::json::object();
  for (const auto& f : spec.raw_features()) {
    nlohmann::json col = nlohmann::json::array();
    for (const auto& r : rows) {
      auto it = r.features.find(f.name);
      if (it == r.features.end()) {
        col.push_back(nullptr);
      } else if (f.kind == transform::RawKind::kNumeric) {
        col.push_back(nlohmann::json::parse(number_text(it->second)));
      } else {
        col.push_back(it->second.bytes_list[0]);
      }
    }
    inputs[f.name] = col;
  }
  return nlohmann::json({{"inputs", inputs}}).dump();
}

TEST(TransformModelOverRest, RawCsvRowsGiveTheInProcessOutputs) {
  if (!fs::exists(tt::kAutosCsv)) GTEST_SKIP() << tt::kAutosCsv << " not installed";
  tt::TempDir dir;
  tt::AutosModel m = tt::train_and_export_autos(dir.path);
  // In process: the raw features through the loaded model directory.
  serve::TensorMap in_process =
      serve::load_servable(m.model_dir)->run("serving_default", tt::raw_request(m.spec, m.eval));
  const Tensor& want = in_process.at("logits").numbers;
  ASSERT_EQ(want.shape(), (Shape{41, 3}));
  for (int64_t i = 0; i < want.num_elements(); ++i)
    ASSERT_NEAR(want.data<float>()[i], m.want_logits.data<float>()[i], 1e-6) << i;

  TernServe server({"--model_name", "autos", "--model_base_path", dir / "models/autos",
                    "--file_system_poll_wait_seconds", "0"},
                   dir / "serve.log");
  ASSERT_TRUE(server.ready()) << "tern serve did not come up:\n" << server.log();
  httplib::Client cli(server.url());
  cli.set_read_timeout(30, 0);
  // The metadata lists the raw features.
  httplib::Result meta = cli.Get("/v1/models/autos/metadata");
  ASSERT_TRUE(meta && meta->status == 200) << (meta ? meta->body : "no response");
  EXPECT_NE(meta->body.find("\"make\""), std::string::npos);
  EXPECT_NE(meta->body.find("DT_STRING"), std::string::npos);

  httplib::Result r = cli.Post("/v1/models/autos:predict", instances_body(m.spec, m.eval),
                               "application/json");
  ASSERT_TRUE(r) << httplib::to_string(r.error()) << "\n" << server.log();
  ASSERT_EQ(r->status, 200) << r->body.substr(0, 2000);
  nlohmann::json predictions = nlohmann::json::parse(r->body).at("predictions");
  ASSERT_EQ(predictions.size(), 41u);
  for (size_t i = 0; i < 41; ++i) {
    const nlohmann::json& logits = predictions[i].at("logits");
    for (size_t k = 0; k < 3; ++k)
      EXPECT_NEAR(logits[k].get<double>(), want.data<float>()[i * 3 + k], 1e-6) << i << " " << k;
    int64_t best = 0;
    for (int64_t k = 1; k < 3; ++k)
      best = want.data<float>()[i * 3 + k] > want.data<float>()[i * 3 + best] ? k : best;
    EXPECT_EQ(predictions[i].at("classes").get<int64_t>(), best) << i;
  }

  httplib::Result c = cli.Post("/v1/models/autos:predict", columnar_body(m.spec, m.eval),
                               "application/json");
  ASSERT_TRUE(c && c->status == 200) << (c ? c->body.substr(0, 2000) : "no response");
  nlohmann::json outputs = nlohmann::json::parse(c->body).at("outputs").at("logits");
  ASSERT_EQ(outputs.size(), 41u);
  for (size_t i = 0; i < 41; ++i) {
    for (size_t k = 0; k < 3; ++k)
      EXPECT_NEAR(outputs[i][k].get<double>(), want.data<float>()[i * 3 + k], 1e-6) << i;
  }
  // A wrong type for a raw feature is the client's error.
  httplib::Result bad = cli.Post("/v1/models/autos:predict",
                                 R"({"instances": [{"make": 3}]})", "application/json");
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->status, 400) << bad->body;
  EXPECT_NE(bad->body.find("is not of expected type: string"), std::string::npos) << bad->body;
  EXPECT_EQ(server.stop(), 0) << server.log();
}

}  // namespace
}  // namespace tern::serve_tests
