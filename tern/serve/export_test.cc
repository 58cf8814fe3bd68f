// Export: batch polymorphism over the model zoo, the self-check, the exported default example
// against the training-time model on the Fashion-MNIST test images, and encoded images over REST.
#include "tern/serve/export.h"

#include <httplib.h>

#include <gtest/gtest.h>

#include <unistd.h>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>

#include "tern/data/idx_dataset.h"
#include "tern/data/idx_images.h"
#include "tern/data/image_codec.h"
#include "tern/ir/printer.h"
#include "tern/models/zoo.h"
#include "tern/serve/base64.h"
#include "tern/serve/loaded_model.h"
#include "tern/serve/rebatch.h"
#include "tern/serve/rest_server.h"
#include "tern/serve/server_core.h"
#include "tests/support/random_tensor.h"

namespace tern::serve {
namespace {

namespace fs = std::filesystem;

// JSON with float numbers, so each is read by strtof from its own text.
using FloatJson = nlohmann::basic_json<std::map, std::vector, std::string, bool, std::int64_t,
                                       std::uint64_t, float>;

std::string temp_dir(const std::string& name) {
  std::string d = (fs::temp_directory_path() / str_cat("tern_export_test_", ::getpid()) / name);
  fs::remove_all(d);
  return d;
}

struct ZooCase {
  std::string name;
  Shape input;
  ops::Attrs args;
};

class RebatchZoo : public ::testing::TestWithParam<int> {};

std::vector<ZooCase> zoo_cases() {
  return {
      {"mlp", {4, 3}, {{"units", std::vector<int64_t>{8}}, {"batch_norm", true}}},
      {"cnn", {12, 12, 1}, {{"filters", std::vector<int64_t>{4, 8}}, {"dense_units", int64_t{8}}}},
      {"resnet18", {16, 16, 3}, {{"width", 0.125}}},
      {"transformer_classifier",
       {6},
       {{"vocab_size", int64_t{10}},
        {"num_layers", int64_t{1}},
        {"d_model", int64_t{8}},
        {"num_heads", int64_t{2}},
        {"ff_dim", int64_t{16}}}},
  };
}

// The graph traced at batch 1 and rebuilt at 3 (and back) prints exactly as the graph traced at 3.
TEST_P(RebatchZoo, RebatchedGraphEqualsTracedGraph) {
  ZooCase c = zoo_cases()[static_cast<size_t>(GetParam())];
  auto model = models::build_model(c.name, c.input, 5, c.args);
  ExportOptions o;
  o.classifier = true;
  auto g1 = trace_inference_graph(*model, o, 1);
  auto g3 = trace_inference_graph(*model, o, 3);
  EXPECT_EQ(graph_batch_size(*g1), 1);
  EXPECT_EQ(first_graph_difference(*rebatch(*g1, 3), *g3), "") << c.name;
  EXPECT_EQ(ir::print_graph(*rebatch(*g3, 1)), ir::print_graph(*g1)) << c.name;
  EXPECT_EQ(rebatch(*g1, 7)->outputs()[0].value->shape().dim(0), 7);
}

INSTANTIATE_TEST_SUITE_P(Zoo, RebatchZoo, ::testing::Range(0, 4), [](const auto& info) {
  return zoo_cases()[static_cast<size_t>(info.param)].name;
});

// Served, each zoo model computes what Model::predict computes at batch 1 and 3 (its graph was
// folded once at load, then rebatched): batch norms folded into the layers before them (the mlp's
// and the ResNet's), nothing left reading a variable, the transformer's broadcasts kept.
TEST_P(RebatchZoo, ServedFoldedModelMatchesPredict) {
  ZooCase c = zoo_cases()[static_cast<size_t>(GetParam())];
  auto model = models::build_model(c.name, c.input, 5, c.args);
  ExportOptions o;
  o.classifier = true;
  std::string dir = temp_dir(str_cat("served_", c.name, "/1"));
  export_model(*model, o, dir);
  ServablePtr s = load(dir);
  auto* loaded = dynamic_cast<const LoadedModel*>(s.get());
  ASSERT_NE(loaded, nullptr);
  const ir::Graph& g = *loaded->contents().graph;
  EXPECT_TRUE(g.nodes_of("variable").empty()) << c.name;
  EXPECT_TRUE(loaded->contents().weights.empty()) << c.name;  // held once, by the constants
  EXPECT_TRUE(g.nodes_of("batch_norm_inference").empty()) << c.name << "\n" << ir::print_graph(g);
  const std::string& alias = s->signatures().at(kDefaultSignature).inputs.begin()->first;
  for (int64_t batch : {1, 3}) {
    std::vector<int64_t> dims = {batch};
    for (int64_t d : c.input.dims()) dims.push_back(d);
    Tensor x = c.name == "transformer_classifier"
                   ? tern::testing::random_tensor(DType::kI64, Shape(dims), 7, 0, 10)
                   : tern::testing::random_tensor(DType::kF32, Shape(dims), 7);
    Tensor want = model->predict(x, batch);
    TensorMap out = s->run(kDefaultSignature, {{alias, TensorValue::from_tensor(x)}});
    const Tensor& got = out.at("logits").numbers;
    EXPECT_TRUE(allclose(got, want, 1e-4, 1e-5))
        << c.name << " batch " << batch << ": " << max_abs_diff(got, want);
  }
}

// A layer that writes the batch into its reshape (what nn::reshape_batch_dim avoids).
class BatchBakingLayer : public nn::Layer {
 public:
  BatchBakingLayer() : nn::Layer("baker") {}
  std::string type_name() const override { return "BatchBaking"; }
  std::vector<ir::Value*> call(nn::LayerContext& ctx, std::span<ir::Value* const> in) override {
    const Shape& s = in[0]->shape();
    return {ctx.graph.add("reshape", {in[0]},
                          {{"shape", std::vector<int64_t>{s.dim(0), s.num_elements() / s.dim(0)}}},
                          "baker/flatten")};
  }
};

TEST(Export, RefusesAGraphThatBakesTheBatchNamingTheNode) {
  auto x = nn::Input({2, 2});
  nn::Model model({x}, {nn::LayerRef(std::make_shared<BatchBakingLayer>())(x)});
  std::string dir = temp_dir("baker/1");
  EXPECT_TERN_ERROR(export_model(model, {}, dir), ErrorCode::kFailedPrecondition, "baker/flatten");
  EXPECT_FALSE(fs::exists(dir));
}

TEST(Export, RefusesElementFunctionsWithoutAGraphFormAndDropsAugmentations) {
  auto model = models::build_model(
      "cnn", {8, 8, 1}, 3, {{"filters", std::vector<int64_t>{2}}, {"dense_units", int64_t{4}}});
  ExportOptions o;
  o.input.dtype = DType::kU8;
  o.input.preprocessing = {{.kind = data::ElementFnKind::kRandomFlip},
                           {.kind = data::ElementFnKind::kScale, .factor = 1.0 / 255}};
  std::vector<std::string> dropped;
  auto g = trace_inference_graph(*model, o, 2, &dropped);
  EXPECT_EQ(dropped, std::vector<std::string>{"random_flip"});
  o.input.preprocessing.push_back({.kind = data::ElementFnKind::kResize, .height = 8, .width = 8});
  EXPECT_TERN_ERROR(trace_inference_graph(*model, o, 2), ErrorCode::kUnimplemented, "'resize'");
}

// Normalize in the graph is bit-identical to the pipeline's element function.
TEST(Export, NormalizeMatchesTheElementFunctionBitForBit) {
  auto x = nn::Input({2, 2, 3});
  nn::Model model({x}, {x});  // identity: the graph is the preprocessing
  ExportOptions o;
  o.input.dtype = DType::kU8;
  data::ElementFnSpec norm{.kind = data::ElementFnKind::kNormalize,
                           .mean = {0.1f, 0.5f, 0.9f},
                           .stddev = {0.3f, 0.25f, 0.7f}};
  o.input.preprocessing = {norm};
  std::string dir = temp_dir("norm/1");
  export_model(model, o, dir);
  ServablePtr s = load(dir);
  Tensor raw(DType::kU8, Shape{2, 2, 2, 3});
  for (int64_t i = 0; i < raw.num_elements(); ++i) raw.set(i, static_cast<double>((i * 37) % 256));
  TensorMap out = s->run(kDefaultSignature, {{"inputs", TensorValue::from_tensor(raw)}});
  Tensor want =
      data::apply_element_fn(norm, {raw.slice_rows(1, 2).reshape(Shape{2, 2, 3})}, 0, false)[0];
  const Tensor& got = out.at("logits").numbers;
  for (int64_t i = 0; i < want.num_elements(); ++i)
    EXPECT_EQ(got.data<float>()[12 + i], want.data<float>()[i]) << i;
}

// The default example: the CNN of examples/fashion_mnist.toml, exported with the IDX
// preprocessing inside, fed raw u8 test images: logits bit-identical to Model::predict on
// idx_images_to_f32 of the same images, in the same batch sizes.
TEST(Export, DefaultExampleMatchesTrainingTimeModelOnFashionMnist) {
  const std::string path = "/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz";
  if (!fs::exists(path)) GTEST_SKIP() << path << " not installed";
  Tensor raw = data::read_idx(path);
  ASSERT_EQ(raw.shape(), (Shape{10000, 28, 28}));
  auto model = models::build_model("cnn", {28, 28, 1}, 10,
                                   {{"filters", std::vector<int64_t>{32, 64}},
                                    {"dense_units", int64_t{128}},
                                    {"dropout", 0.25}});
  const int64_t batch = 256;
  Tensor want = model->predict(data::idx_images_to_f32(raw, path), batch);
  ExportOptions o;
  o.input = {.alias = "images",
             .dtype = DType::kU8,
             .shape = Shape{28, 28},
             .preprocessing = {{.kind = data::ElementFnKind::kScale, .factor = 1.0 / 255}}};
  o.classifier = true;
  std::string dir = temp_dir("fashion/1");
  ExportReport report = export_model(*model, o, dir);
  EXPECT_EQ(report.signatures, (std::vector<std::string>{"classify", "serving_default"}));
  ServablePtr s = load(dir);
  const Signature& sig = s->signatures().at(kDefaultSignature);
  EXPECT_EQ(sig.inputs.at("images").dtype, WireDType::kUInt8);
  EXPECT_EQ(sig.inputs.at("images").shape, (std::vector<int64_t>{-1, 28, 28}));
  int64_t mismatches = 0;
  for (int64_t begin = 0; begin < 10000; begin += batch) {
    int64_t end = std::min<int64_t>(begin + batch, 10000);
    TensorMap out = s->run(kDefaultSignature,
                           {{"images", TensorValue::from_tensor(raw.slice_rows(begin, end))}});
    const Tensor& logits = out.at("logits").numbers;
    ASSERT_EQ(logits.shape(), (Shape{end - begin, 10}));
    const float* got = logits.data<float>();
    const float* ref = want.data<float>() + begin * 10;
    for (int64_t i = 0; i < logits.num_elements(); ++i) mismatches += got[i] != ref[i];
    const Tensor& classes = out.at("classes").numbers;
    ASSERT_EQ(classes.dtype(), DType::kI64);
    for (int64_t r = 0; r < end - begin; ++r) {
      int64_t best = 0;
      for (int64_t k = 1; k < 10; ++k) best = ref[r * 10 + k] > ref[r * 10 + best] ? k : best;
      EXPECT_EQ(classes.data<int64_t>()[r], best);
    }
  }
  EXPECT_EQ(mismatches, 0) << "logits differ from Model::predict";
}

// An encoded-image model through the REST front end: {"b64": ...} instances (PNG and JPEG, decoded
// and resized by the image_dir decoder) give the servable's in-process logits bit for bit (each
// number read by strtof from its own text); a corrupt image is a 400 naming the input.
// (tern/config's export_test checks the in-process logits against the config's eval pipeline.)
TEST(Export, EncodedImagesOverRestAsB64GiveTheInProcessLogits) {
  auto model = models::build_model(
      "cnn", {12, 12, 3}, 2, {{"filters", std::vector<int64_t>{2}}, {"dense_units", int64_t{4}}});
  ExportOptions o;
  o.input = {.alias = "images",
             .dtype = DType::kU8,
             .shape = Shape{12, 12, 3},
             .preprocessing = {{.kind = data::ElementFnKind::kScale, .factor = 1.0 / 255}},
             .decoder = {.kind = DecoderKind::kImage, .channels = 3, .height = 12, .width = 12}};
  std::string base = temp_dir("rest_images");
  export_model(*model, o, base + "/1");
  std::vector<std::string> images;
  for (int64_t i = 0; i < 3; ++i) {
    Tensor img(DType::kU8, Shape{10 + i, 9 + 2 * i, 3});
    for (int64_t k = 0; k < img.num_elements(); ++k)
      img.set(k, static_cast<double>((k * 31 + i * 7) % 256));
    images.push_back(i == 1 ? data::encode_jpeg(img) : data::encode_png(img));
  }
  ServablePtr s = load(base + "/1");
  TensorMap in_process =
      s->run(kDefaultSignature, {{"images", TensorValue::from_strings({3}, images)}});
  const Tensor& want = in_process.at("logits").numbers;
  ServerCore core({.model_name = "img",
                   .model_base_path = base,
                   .file_system_poll_wait_seconds = -1,
                   .loader = [](const std::string& d) { return load_servable(d); }});
  RestServer rest(core, {.host = "127.0.0.1"});
  rest.start();
  httplib::Client cli("127.0.0.1", rest.port());
  nlohmann::json body = {{"instances", nlohmann::json::array()}};
  for (const auto& f : images) body["instances"].push_back({{"b64", base64_encode(f)}});
  auto r = cli.Post("/v1/models/img:predict", body.dump(), "application/json");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  FloatJson predictions = FloatJson::parse(r->body).at("predictions");
  ASSERT_EQ(predictions.size(), 3u);
  for (size_t row = 0; row < 3; ++row) {
    const FloatJson& logits = predictions[row];  // one output: rows without names
    ASSERT_EQ(logits.size(), 2u);
    for (size_t k = 0; k < 2; ++k)
      EXPECT_EQ(logits[k].get<float>(), want.data<float>()[row * 2 + k]) << row << " " << k;
  }
  body["instances"][1]["b64"] = base64_encode("\x89PNG\r\n\x1a\n broken");
  r = cli.Post("/v1/models/img:predict", body.dump(), "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400) << r->body;
  EXPECT_NE(r->body.find("input 'images' example 1"), std::string::npos) << r->body;
  rest.stop();
}

}  // namespace
}  // namespace tern::serve
