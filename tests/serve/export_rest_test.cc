// Exported model vs training-time model through the REST API: the default example's CNN
// (examples/fashion_mnist.toml, built and seeded by tern/config, weights saved and exported with
// the config's preprocessing inside) served by the built `tern serve`, fed all 10k Fashion-MNIST
// test images as raw uint8 in `instances` requests; the returned logits equal Model::predict's
// bit for bit (parsed with strtof: the JSON writer prints round-trip floats) and the classes are
// their argmax.
#include <httplib.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>

#include "tern/config/builders.h"
#include "tern/config/config.h"
#include "tern/config/export.h"
#include "tern/data/idx_dataset.h"
#include "tern/data/idx_images.h"
#include "tests/serve/serve_process.h"

namespace tern::serve_tests {
namespace {

namespace fs = std::filesystem;

// JSON with float numbers, so each number is read by strtof from its own text (no detour through
// double).
using FloatJson = nlohmann::basic_json<std::map, std::vector, std::string, bool, std::int64_t,
                                       std::uint64_t, float>;

constexpr int64_t kRows = 250;  // per request, and Model::predict's batch

std::string instances_body(const Tensor& raw, int64_t begin, int64_t end) {
  const uint8_t* px = raw.data<uint8_t>();
  std::string body = R"({"instances": [)";
  body.reserve(static_cast<size_t>((end - begin) * 28 * 28 * 4 + 64));
  for (int64_t r = begin; r < end; ++r) {
    body += r == begin ? "[" : ",[";
    for (int64_t y = 0; y < 28; ++y) {
      body += y ? ",[" : "[";
      for (int64_t x = 0; x < 28; ++x) {
        if (x) body += ',';
        body += std::to_string(px[(r * 28 + y) * 28 + x]);
      }
      body += ']';
    }
    body += ']';
  }
  return body + "]}";
}

TEST(ExportedModelOverRest, FashionMnistLogitsEqualModelPredictBitForBit) {
  const std::string images = "/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz";
  if (!fs::exists(images)) GTEST_SKIP() << images << " not installed";
  const auto start = std::chrono::steady_clock::now();
  std::string pattern = (fs::temp_directory_path() / "tern_serve_export_XXXXXX").string();
  const std::string dir = ::mkdtemp(pattern.data());
  struct Cleanup {
    std::string dir;
    ~Cleanup() {
      std::error_code ec;
      fs::remove_all(dir, ec);
    }
  } cleanup{dir};

  // The training-time model, seeded by the config (no training needed for equality).
  config::TrainConfig cfg = config::load_config(TERN_SOURCE_DIR "/examples/fashion_mnist.toml");
  auto model = config::make_model(cfg, Shape{28, 28, 1});
  model->save_weights(dir + "/weights.safetensors");
  serve::ExportReport report =
      config::export_from_config(cfg, dir + "/fashion/1", dir + "/weights.safetensors");
  ASSERT_EQ(report.signatures, (std::vector<std::string>{"classify", "serving_default"}));

  Tensor raw = data::read_idx(images);
  ASSERT_EQ(raw.shape(), (Shape{10000, 28, 28}));
  const Tensor want = model->predict(data::idx_images_to_f32(raw, images), kRows);
  ASSERT_EQ(want.shape(), (Shape{10000, 10}));

  TernServe server({"--model_name", "fashion", "--model_base_path", dir + "/fashion",
                    "--file_system_poll_wait_seconds", "0"},
                   dir + "/serve.log");
  ASSERT_TRUE(server.ready()) << "tern serve did not come up:\n" << server.log();
  httplib::Client cli(server.url());
  cli.set_read_timeout(60, 0);
  int64_t mismatches = 0, wrong_classes = 0;
  for (int64_t begin = 0; begin < 10000; begin += kRows) {
    const int64_t end = std::min<int64_t>(begin + kRows, 10000);
    httplib::Result r =
        cli.Post("/v1/models/fashion:predict", instances_body(raw, begin, end), "application/json");
    ASSERT_TRUE(r) << httplib::to_string(r.error()) << "\n" << server.log();
    ASSERT_EQ(r->status, 200) << r->body.substr(0, 2000);
    FloatJson predictions = FloatJson::parse(r->body).at("predictions");
    ASSERT_EQ(predictions.size(), static_cast<size_t>(end - begin));
    for (int64_t row = begin; row < end; ++row) {
      const FloatJson& p = predictions[static_cast<size_t>(row - begin)];
      const FloatJson& logits = p.at("logits");
      ASSERT_EQ(logits.size(), 10u);
      const float* ref = want.data<float>() + row * 10;
      int64_t best = 0;
      for (int64_t k = 0; k < 10; ++k) {
        const float got = logits[static_cast<size_t>(k)].get<float>();
        mismatches += std::memcmp(&got, &ref[k], sizeof(float)) != 0;
        best = ref[k] > ref[best] ? k : best;
      }
      wrong_classes += p.at("classes").get<int64_t>() != best;
    }
  }
  EXPECT_EQ(mismatches, 0) << "REST logits differ from Model::predict";
  EXPECT_EQ(wrong_classes, 0);
  EXPECT_EQ(server.stop(), 0) << server.log();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::cout << "[ serve ] 10000 images over REST in " << seconds << " s (export, predict, serve)\n";
}

}  // namespace
}  // namespace tern::serve_tests
