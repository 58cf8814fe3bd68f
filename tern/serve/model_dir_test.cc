// Model directories: round trip, validation errors naming the file, atomic writes, fingerprint,
// the servable's request checks, decoders and concurrent runs.
#include "tern/serve/model_dir.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "tern/base/version.h"
#include "tern/data/example_proto.h"
#include "tern/data/idx_images.h"
#include "tern/io/atomic_file.h"
#include "tern/ir/printer.h"
#include "tern/models/zoo.h"
#include "tern/serve/export.h"
#include "tern/serve/loaded_model.h"
#include "tests/support/random_tensor.h"

namespace tern::serve {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string temp_dir(const std::string& name) {
  std::string d = (fs::temp_directory_path() / str_cat("tern_model_dir_test_", ::getpid()) / name);
  fs::remove_all(d);
  return d;
}

std::shared_ptr<nn::Model> small_cnn() {
  return models::build_model("cnn", {6, 6, 1}, 3,
                             {{"filters", std::vector<int64_t>{2}}, {"dense_units", int64_t{4}}});
}

ExportOptions image_options() {
  ExportOptions o;
  o.input = {.alias = "images",
             .dtype = DType::kU8,
             .shape = Shape{6, 6},
             .preprocessing = {{.kind = data::ElementFnKind::kScale, .factor = 1.0 / 255}}};
  o.classifier = true;
  o.class_names = {"cat", "dog", "bird"};
  return o;
}

Tensor images(int64_t n, int seed) {
  Tensor t(DType::kU8, Shape{n, 6, 6});
  for (int64_t i = 0; i < t.num_elements(); ++i)
    t.set(i, static_cast<double>((i * 31 + seed) % 256));
  return t;
}

// An exported copy of the small model at `dir`.
std::string exported(const std::string& name) {
  std::string dir = temp_dir(name);
  auto m = small_cnn();
  export_model(*m, image_options(), dir);
  return dir;
}

void rewrite(const std::string& path, const std::string& bytes) {
  fs::remove(path);
  std::ofstream(path, std::ios::binary) << bytes;
}

// Replaces a file and re-signs the directory, so that only the content check can fail.
void tamper(const std::string& dir, const std::string& file, const std::string& bytes) {
  rewrite(dir + "/" + file, bytes);
  rewrite(dir + "/" + kFingerprintFile, json({{"sha256", fingerprint_model_dir(dir)}}).dump());
}

json read_json(const std::string& path) {
  return json::parse(io::read_file(path));
}

TEST(ModelDir, RoundTrip) {
  auto m = small_cnn();
  std::string dir = temp_dir("round/1");
  ExportReport r = export_model(*m, image_options(), dir);
  ModelDirContents c = read_model_dir(dir);
  EXPECT_EQ(c.fingerprint, r.fingerprint);
  EXPECT_EQ(c.fingerprint.size(), 64u);
  EXPECT_EQ(c.model_name, m->name());
  EXPECT_EQ(c.tern_version, tern::version());  // manifest.json records the tern that wrote it
  EXPECT_EQ(ir::print_graph(*c.graph),
            ir::print_graph(*trace_inference_graph(*m, image_options(), 1)));
  ASSERT_EQ(c.weights.size(), m->weights().size());
  for (const auto& [name, t] : c.weights) {
    const Tensor& w = m->variables().get(name);
    ASSERT_EQ(t.type(), w.type()) << name;
    EXPECT_EQ(std::memcmp(t.raw_data(), w.raw_data(), t.nbytes()), 0) << name;
  }
  EXPECT_EQ(c.assets.at("class_names.txt"), "cat\ndog\nbird\n");
  const StoredSignature& s = c.signatures.at(kDefaultSignature);
  EXPECT_EQ(s.signature.method_name, kPredictMethod);
  EXPECT_EQ(s.signature.inputs.at("images").shape, (std::vector<int64_t>{-1, 6, 6}));
  EXPECT_EQ(s.signature.inputs.at("images").name, "images:0");
  EXPECT_EQ(s.signature.outputs.at("classes").dtype, WireDType::kInt64);
  EXPECT_EQ(s.signature.outputs.at("probabilities").shape, (std::vector<int64_t>{-1, 3}));
  const StoredSignature& cl = c.signatures.at("classify");
  EXPECT_EQ(cl.signature.method_name, kClassifyMethod);
  EXPECT_EQ(cl.decoders.at("inputs").kind, DecoderKind::kExample);
  EXPECT_EQ(cl.output_labels.at("classes"), "class_names.txt");
  // Writing what was read gives the same fingerprint.
  std::string again = temp_dir("round/2");
  EXPECT_EQ(write_model_dir(c, again), c.fingerprint);
  EXPECT_EQ(read_model_dir(again).signatures, c.signatures);
}

TEST(ModelDir, ServableMatchesAnExecutableAtEveryBatchSize) {
  auto m = small_cnn();
  std::string dir = temp_dir("serve/1");
  export_model(*m, image_options(), dir);
  ServablePtr s = load_servable(dir);
  Tensor x = images(5, 3);
  Tensor ref = m->predict(data::idx_images_to_f32(x, "x"), 5);
  for (int64_t n : {1, 2, 5}) {
    TensorMap out =
        s->run(kDefaultSignature, {{"images", TensorValue::from_tensor(x.slice_rows(0, n))}});
    const Tensor& logits = out.at("logits").numbers;
    ASSERT_EQ(logits.shape(), (Shape{n, 3}));
    for (int64_t i = 0; i < logits.num_elements(); ++i)
      EXPECT_NEAR(logits.data<float>()[i], ref.data<float>()[i], 1e-5) << n;
    EXPECT_EQ(out.at("probabilities").numbers.shape(), (Shape{n, 3}));
  }
  EXPECT_EQ(dynamic_cast<const LoadedModel&>(*s).compiled_batch_sizes(), 3u);
  TensorMap empty = s->run(kDefaultSignature, {{"images", TensorValue::from_tensor(images(0, 0))}});
  EXPECT_EQ(empty.at("logits").shape, (std::vector<int64_t>{0, 3}));
}

TEST(ModelDir, RunChecksInputsNamingTheAlias) {
  ServablePtr s = load(exported("run/1"));
  Tensor f(DType::kF32, Shape{2, 6, 6});
  EXPECT_TERN_ERROR(s->run(kDefaultSignature, {{"images", TensorValue::from_tensor(f)}}),
                    ErrorCode::kInvalidArgument,
                    "input 'images': expected DT_UINT8[-1,6,6], got DT_FLOAT[2,6,6]");
  Tensor wrong(DType::kU8, Shape{2, 6, 5});
  EXPECT_TERN_ERROR(s->run(kDefaultSignature, {{"images", TensorValue::from_tensor(wrong)}}),
                    ErrorCode::kInvalidArgument, "got DT_UINT8[2,6,5]");
  EXPECT_TERN_ERROR(s->run(kDefaultSignature, {}), ErrorCode::kInvalidArgument,
                    "missing input 'images'");
  EXPECT_TERN_ERROR(s->run(kDefaultSignature, {{"images", TensorValue::from_tensor(images(1, 0))},
                                               {"extra", TensorValue::from_tensor(images(1, 0))}}),
                    ErrorCode::kInvalidArgument, "no input 'extra'");
  EXPECT_TERN_ERROR(s->run("nope", {}), ErrorCode::kInvalidArgument,
                    "Serving signature name: \"nope\" not found");
}

TEST(ModelDir, ClassifySignatureDecodesExamples) {
  ServablePtr s = load(exported("classify/1"));
  Tensor x = images(3, 7);
  TensorMap ref = s->run(kDefaultSignature, {{"images", TensorValue::from_tensor(x)}});
  std::vector<std::string> records;
  for (int64_t i = 0; i < 3; ++i) {
    std::vector<int64_t> pixels;
    std::string bytes;
    for (int64_t k = 0; k < 36; ++k) {
      pixels.push_back(static_cast<int64_t>(x.get(i * 36 + k)));
      bytes.push_back(static_cast<char>(pixels.back()));
    }
    data::Example e;
    // Pixels as an int64 list, or as one bytes value of raw pixels: both decode the same.
    e.features["image"] = i == 1 ? data::Feature::bytes({bytes}) : data::Feature::int64s(pixels);
    records.push_back(data::serialize_example(e));
  }
  TensorMap out = s->run("classify", {{"inputs", TensorValue::from_strings({3}, records)}});
  const Tensor& scores = out.at("scores").numbers;
  const Tensor& probs = ref.at("probabilities").numbers;
  ASSERT_EQ(scores.shape(), (Shape{3, 3}));
  for (int64_t i = 0; i < 9; ++i) EXPECT_EQ(scores.data<float>()[i], probs.data<float>()[i]);
  EXPECT_EQ(out.at("classes").shape, (std::vector<int64_t>{3, 3}));
  EXPECT_EQ(out.at("classes").strings[4], "dog");
  // A record without the feature, or with the wrong number of values, names the example.
  data::Example bad;
  bad.features["image"] = data::Feature::int64s({1, 2, 3});
  EXPECT_TERN_ERROR(
      s->run("classify",
             {{"inputs", TensorValue::from_strings({1}, {data::serialize_example(bad)})}}),
      ErrorCode::kInvalidArgument, "input 'inputs' example 0 feature 'image': expected 36 values");
  EXPECT_TERN_ERROR(s->run("classify", {{"inputs", TensorValue::from_strings({1}, {"\xff\xff"})}}),
                    ErrorCode::kInvalidArgument, "input 'inputs' example 0");
  bad.features.clear();
  EXPECT_TERN_ERROR(
      s->run("classify",
             {{"inputs", TensorValue::from_strings({1}, {data::serialize_example(bad)})}}),
      ErrorCode::kInvalidArgument, "no feature 'image'");
}

TEST(ModelDir, ConcurrentRunsGiveTheSerialResults) {
  ServablePtr s = load(exported("threads/1"));
  std::vector<TensorMap> want;
  for (int64_t n = 1; n <= 4; ++n)
    want.push_back(s->run(kDefaultSignature, {{"images", TensorValue::from_tensor(images(n, 5))}}));
  std::atomic<int> mismatches{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int iter = 0; iter < 20; ++iter) {
        int64_t n = (t + iter) % 4 + 1;
        TensorMap got =
            s->run(kDefaultSignature, {{"images", TensorValue::from_tensor(images(n, 5))}});
        const Tensor& a = got.at("logits").numbers;
        const Tensor& b = want[static_cast<size_t>(n - 1)].at("logits").numbers;
        if (std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()) != 0) ++mismatches;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(mismatches.load(), 0);
}

// --- validation: every error names the file ---

TEST(ModelDir, MissingFilesAreNamed) {
  for (const char* f :
       {kManifestFile, kGraphFile, kWeightsFile, kSignaturesFile, kFingerprintFile}) {
    std::string dir = exported(str_cat("missing_", f, "/1"));
    fs::remove(dir + "/" + f);
    EXPECT_TERN_ERROR(read_model_dir(dir), ErrorCode::kNotFound, str_cat(dir, "/", f, ": missing"));
  }
  EXPECT_TERN_ERROR(read_model_dir(temp_dir("nothing/1")), ErrorCode::kNotFound, "does not exist");
}

TEST(ModelDir, FingerprintMismatchIsDetected) {
  std::string dir = exported("fp/1");
  std::string sig = io::read_file(dir + "/" + kSignaturesFile);
  rewrite(dir + "/" + kSignaturesFile, sig + " ");
  EXPECT_TERN_ERROR(read_model_dir(dir), ErrorCode::kDataLoss,
                    "fingerprint.json: fingerprint mismatch");
  // An added file changes the fingerprint too.
  std::string dir2 = exported("fp/2");
  rewrite(dir2 + "/assets/extra.txt", "x");
  EXPECT_TERN_ERROR(read_model_dir(dir2), ErrorCode::kDataLoss, "fingerprint mismatch");
}

TEST(ModelDir, MalformedJsonNamesFileAndKey) {
  std::string dir = exported("json/1");
  std::string file = dir + "/" + kSignaturesFile;
  json sig = read_json(file);
  tamper(dir, kSignaturesFile, "{\"signatures\": ");
  EXPECT_TERN_ERROR(read_model_dir(dir), ErrorCode::kInvalidArgument, file + ": malformed JSON");
  json s1 = sig;
  s1["signatures"]["serving_default"].erase("method_name");
  tamper(dir, kSignaturesFile, s1.dump());
  EXPECT_TERN_ERROR(read_model_dir(dir), ErrorCode::kInvalidArgument,
                    "missing key 'signatures.serving_default.method_name'");
  json s2 = sig;
  s2["signatures"]["serving_default"]["inputs"]["images"]["dtype"] = "DT_FLOT";
  tamper(dir, kSignaturesFile, s2.dump());
  EXPECT_TERN_ERROR(
      read_model_dir(dir), ErrorCode::kInvalidArgument,
      "key 'signatures.serving_default.inputs.images.dtype' has unknown dtype 'DT_FLOT'");
  json m = read_json(dir + "/" + kManifestFile);
  tamper(dir, kSignaturesFile, sig.dump());
  m["format_version"] = 2;
  tamper(dir, kManifestFile, m.dump());
  EXPECT_TERN_ERROR(read_model_dir(dir), ErrorCode::kInvalidArgument,
                    str_cat(kManifestFile, ": key 'format_version' is 2"));
}

// An image decoder with the image_dir resize and resize / center_crop steps, and an example
// decoder with a feature spec, survive write_signatures -> parse_signatures; unknown steps and
// bad sizes are named.
TEST(ModelDir, DecoderStepsAndExampleSpecsRoundTripAndBadStepsAreNamed) {
  StoredSignature s;
  s.signature.inputs["images"] = {WireDType::kString, {-1}, false, "images:0"};
  s.input_tensors["images"] = "images";
  s.decoders["images"] = {
      .kind = DecoderKind::kImage,
      .channels = 3,
      .height = 12,
      .width = 14,
      .method = data::ResizeMethod::kNearest,
      .steps = {{.kind = data::ElementFnKind::kResize,
                 .height = 10,
                 .width = 9,
                 .method = data::ResizeMethod::kBilinear},
                {.kind = data::ElementFnKind::kCenterCrop, .height = 8, .width = 8}}};
  s.signature.outputs["logits"] = {WireDType::kFloat, {-1, 2}, false, "logits:0"};
  s.output_tensors["logits"] = "logits";
  s.signature.inputs["examples"] = {WireDType::kString, {-1}, false, "examples:0"};
  s.input_tensors["examples"] = "examples";
  data::FeatureSpec pixels =
      data::fixed_len_feature("pixels", data::FeatureKind::kBytes, {4, 4, 1});
  pixels.dtype = DType::kU8;
  s.decoders["examples"] = {
      .kind = DecoderKind::kExample, .feature = "pixels", .example_spec = {pixels}};
  StoredSignatures sigs{{"serving_default", s}};
  EXPECT_EQ(parse_signatures(write_signatures(sigs), "sig.json"), sigs);
  json j = json::parse(write_signatures(sigs));
  json& dec = j["signatures"]["serving_default"]["inputs"]["images"]["decoder"];
  dec["steps"][1]["fn"] = "random_flip";
  EXPECT_TERN_ERROR(parse_signatures(j.dump(), "sig.json"), ErrorCode::kInvalidArgument,
                    "sig.json: key 'signatures.serving_default.inputs.images.decoder.steps[1].fn' "
                    "is 'random_flip'");
  dec["steps"][1]["fn"] = "center_crop";
  dec["size"] = {0, 4};
  EXPECT_TERN_ERROR(parse_signatures(j.dump(), "sig.json"), ErrorCode::kInvalidArgument,
                    "decoder.size' must be [height, width] of positive integers");
}

TEST(ModelDir, SignatureDisagreeingWithTheGraphIsNamed) {
  std::string dir = exported("sig/1");
  std::string file = dir + "/" + kSignaturesFile;
  json sig = read_json(file);
  json s1 = sig;
  s1["signatures"]["serving_default"]["inputs"]["images"]["tensor"] = "pixels";
  tamper(dir, kSignaturesFile, s1.dump());
  EXPECT_TERN_ERROR(
      read_model_dir(dir), ErrorCode::kInvalidArgument,
      file + ": signature 'serving_default' input 'images' names graph input 'pixels'");
  json s2 = sig;
  s2["signatures"]["serving_default"]["inputs"]["images"]["dtype"] = "DT_FLOAT";
  tamper(dir, kSignaturesFile, s2.dump());
  EXPECT_TERN_ERROR(
      read_model_dir(dir), ErrorCode::kInvalidArgument,
      "input 'images' is DT_FLOAT[-1,6,6] but graph input 'images' is DT_UINT8[-1,6,6]");
  json s3 = sig;
  s3["signatures"]["serving_default"]["outputs"]["logits"]["shape"] = {-1, 4};
  tamper(dir, kSignaturesFile, s3.dump());
  EXPECT_TERN_ERROR(
      read_model_dir(dir), ErrorCode::kInvalidArgument,
      "output 'logits' is DT_FLOAT[-1,4] but graph output 'logits' is DT_FLOAT[-1,3]");
  json s4 = sig;
  s4["signatures"]["serving_default"]["outputs"]["logits"]["tensor"] = "scores";
  tamper(dir, kSignaturesFile, s4.dump());
  EXPECT_TERN_ERROR(read_model_dir(dir), ErrorCode::kInvalidArgument,
                    "names graph output 'scores', which graph.tern does not have");
}

TEST(ModelDir, WeightsDisagreeingWithTheGraphAreNamed) {
  std::string dir = exported("weights/1");
  std::string file = dir + "/" + kWeightsFile;
  io::NamedTensors w = io::decode_safetensors(io::read_file(file), file).tensors;
  std::string name = w[0].first;
  io::NamedTensors missing(w.begin() + 1, w.end());
  tamper(dir, kWeightsFile, io::encode_safetensors(missing));
  EXPECT_TERN_ERROR(read_model_dir(dir), ErrorCode::kInvalidArgument,
                    file + ": no tensor '" + name + "', which graph.tern reads");
  io::NamedTensors extra = w;
  extra.emplace_back("stray/kernel", Tensor::zeros(DType::kF32, Shape{2}));
  tamper(dir, kWeightsFile, io::encode_safetensors(extra));
  EXPECT_TERN_ERROR(read_model_dir(dir), ErrorCode::kInvalidArgument,
                    file + ": tensor 'stray/kernel' is not read by graph.tern");
  io::NamedTensors reshaped = w;
  reshaped[0].second = Tensor::zeros(DType::kF32, Shape{reshaped[0].second.num_elements() + 1});
  tamper(dir, kWeightsFile, io::encode_safetensors(reshaped));
  EXPECT_TERN_ERROR(read_model_dir(dir), ErrorCode::kInvalidArgument,
                    file + ": tensor '" + name + "' is f32[");
  tamper(dir, kWeightsFile, "garbage");
  EXPECT_TERN_ERROR(read_model_dir(dir), ErrorCode::kDataLoss, file);
  tamper(dir, kGraphFile, "graph @main {\n  %x = nosuchop() : f32[1]\n}\n");
  EXPECT_TERN_ERROR(read_model_dir(dir), ErrorCode::kInvalidArgument, dir + "/graph.tern:2");
}

// --- atomic writes ---

std::vector<std::string> entries(const std::string& dir) {
  std::vector<std::string> out;
  if (!fs::exists(dir)) return out;
  for (const auto& e : fs::directory_iterator(dir)) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

TEST(ModelDir, FailedWriteLeavesNoPartialDirectory) {
  std::string base = temp_dir("atomic");
  ModelDirContents c = read_model_dir(exported("atomic_src/1"));
  fs::create_directories(base);
  // A bad asset name fails the write before anything is renamed: no version, no temp sibling.
  c.assets["../escape"] = "x";
  EXPECT_TERN_ERROR(write_model_dir(c, base + "/1"), ErrorCode::kInvalidArgument,
                    "invalid asset file name '../escape'");
  EXPECT_EQ(entries(base), std::vector<std::string>{});
  c.assets.erase("../escape");
  write_model_dir(c, base + "/1");
  EXPECT_EQ(entries(base), std::vector<std::string>{"1"});
  // An existing version is never overwritten.
  std::string before = fingerprint_model_dir(base + "/1");
  c.assets["more.txt"] = "y";
  EXPECT_TERN_ERROR(write_model_dir(c, base + "/1"), ErrorCode::kFailedPrecondition,
                    "already exists");
  EXPECT_EQ(fingerprint_model_dir(base + "/1"), before);
  EXPECT_EQ(entries(base), std::vector<std::string>{"1"});
  EXPECT_EQ(entries(base + "/1"),
            (std::vector<std::string>{"assets", "fingerprint.json", "graph.tern", "signatures.json",
                                      "tern_model.json", "weights.safetensors"}));
}

TEST(ModelDir, ModelSaveWritesALoadableDirectory) {
  auto m = small_cnn();
  std::string dir = temp_dir("save/1");
  m->save(dir);
  ServablePtr s = load(dir);
  const Signature& sig = s->signatures().at(kDefaultSignature);
  EXPECT_EQ(sig.inputs.at("inputs").dtype, WireDType::kFloat);
  EXPECT_EQ(sig.inputs.at("inputs").shape, (std::vector<int64_t>{-1, 6, 6, 1}));
  EXPECT_EQ(sig.outputs.size(), 1u);
  EXPECT_FALSE(s->fingerprint().empty());
}

}  // namespace
}  // namespace tern::serve
