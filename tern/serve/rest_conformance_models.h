// The REST conformance suite's models as real model directories (test-only header): what
// rest_test_backend.h serves in memory, written with write_model_dir so that the built `tern serve`
// can serve the same models (tests/serve/tern_serve_conformance_test.cc).
//
// One hand-written graph holds every signature; each signature feeds only the graph inputs its
// outputs read (loaded_model.h runs its part of the graph). Versions differ only in their weights:
//   serving_default  x f32[-1] -> y = x * scale + offset   (variables; offset 3 in v1, 2 in v2)
//   scalar           x f32[-1] -> total = sum(x), f32[]
//   two_inputs       a f32[-1,2], b i64[-1] -> sum = a0 + a1 + b, echo_b = b
//   half             h f16[-1] -> y = f32(h)
//   classify         inputs: tf.Example strings, float feature "x" decoded to f32[-1,1] ->
//                    classes (asset classes.txt: pos, neg), scores = [x, 1 - x]
//   regress          inputs: as classify -> outputs = 0.5 x + 2, f32[-1]
// Not expressible (the TestBackend keeps it in-process): `bytes`, whose outputs are strings
// computed from the input strings (a graph's outputs are numbers; string outputs are only class
// names from an asset). Version 3 is written and then has its weights file truncated: the server
// refuses it (DATA_LOSS, fingerprint mismatch) and keeps serving 1 and 2.
#pragma once

#include <filesystem>
#include <fstream>
#include <string>

#include "tern/ir/parser.h"
#include "tern/serve/model_dir.h"

namespace tern::serve::testing {

inline constexpr const char* kConformanceGraph = R"(graph @main {
  %x = input() {dtype=f32, name="x", shape=[1]}
  %scale = variable() {dtype=f32, name="scale", shape=[]}
  %offset = variable() {dtype=f32, name="offset", shape=[]}
  %x_scaled = mul(%x, %scale)
  %y = add(%x_scaled, %offset)
  %total = sum(%x) {axes=[], keepdims=false}
  %a = input() {dtype=f32, name="a", shape=[1, 2]}
  %b = input() {dtype=i64, name="b", shape=[1]}
  %a_sum = sum(%a) {axes=[1], keepdims=false}
  %b_f32 = cast(%b) {dtype=f32}
  %sum = add(%a_sum, %b_f32)
  %h = input() {dtype=f16, name="h", shape=[1]}
  %h_y = cast(%h) {dtype=f32}
  %ex = input() {dtype=f32, name="tf_example", shape=[1, 1]}
  %one = constant() {value=tensor<f32[]>[1]}
  %one_minus_ex = sub(%one, %ex)
  %scores = concat(%ex, %one_minus_ex) {axis=1}
  %half = constant() {value=tensor<f32[]>[0.5]}
  %two = constant() {value=tensor<f32[]>[2]}
  %ex_half = mul(%ex, %half)
  %ex_y = add(%ex_half, %two)
  %outputs = reshape(%ex_y) {shape=[-1]}
  return {"y": %y, "total": %total, "sum": %sum, "echo_b": %b, "h_y": %h_y, "scores": %scores,
          "outputs": %outputs}
}
)";

// The half_plus_two model at one version: y = 0.5 x + `offset`.
inline ModelDirContents conformance_model(float offset) {
  ModelDirContents c;
  c.model_name = "half_plus_two";
  c.graph = ir::parse_graph(kConformanceGraph, "conformance_graph");
  c.weights.emplace_back("scale", Tensor::scalar(DType::kF32, 0.5));
  c.weights.emplace_back("offset", Tensor::scalar(DType::kF32, offset));
  c.assets["classes.txt"] = "pos\nneg\n";
  auto spec = [](WireDType d, std::vector<int64_t> shape) {
    return TensorSpec{d, std::move(shape), false, ""};
  };
  auto sig = [&](const std::string& name, const char* method) -> StoredSignature& {
    StoredSignature& s = c.signatures[name];
    s.signature.method_name = method;
    return s;
  };
  auto input = [&](StoredSignature& s, const std::string& alias, const std::string& tensor,
                   TensorSpec t) {
    t.name = tensor + ":0";
    s.signature.inputs[alias] = t;
    s.input_tensors[alias] = tensor;
  };
  auto output = [&](StoredSignature& s, const std::string& alias, const std::string& tensor,
                    TensorSpec t) {
    t.name = tensor + ":0";
    s.signature.outputs[alias] = t;
    s.output_tensors[alias] = tensor;
  };
  StoredSignature& def = sig(kDefaultSignature, kPredictMethod);
  input(def, "x", "x", spec(WireDType::kFloat, {-1}));
  output(def, "y", "y", spec(WireDType::kFloat, {-1}));
  StoredSignature& scalar = sig("scalar", kPredictMethod);
  input(scalar, "x", "x", spec(WireDType::kFloat, {-1}));
  output(scalar, "total", "total", spec(WireDType::kFloat, {}));
  StoredSignature& two = sig("two_inputs", kPredictMethod);
  input(two, "a", "a", spec(WireDType::kFloat, {-1, 2}));
  input(two, "b", "b", spec(WireDType::kInt64, {-1}));
  output(two, "sum", "sum", spec(WireDType::kFloat, {-1}));
  output(two, "echo_b", "echo_b", spec(WireDType::kInt64, {-1}));
  StoredSignature& half = sig("half", kPredictMethod);
  input(half, "h", "h", spec(WireDType::kHalf, {-1}));
  output(half, "y", "h_y", spec(WireDType::kFloat, {-1}));
  for (const char* name : {"classify", "regress"}) {
    const bool cls = std::string(name) == "classify";
    StoredSignature& s = sig(name, cls ? kClassifyMethod : kRegressMethod);
    input(s, "inputs", "tf_example", spec(WireDType::kString, {-1}));
    s.decoders["inputs"] = {.kind = DecoderKind::kExample, .feature = "x", .channels = 0};
    if (cls) {
      s.signature.outputs["classes"] = spec(WireDType::kString, {-1, 2});
      s.output_labels["classes"] = "classes.txt";
      output(s, "scores", "scores", spec(WireDType::kFloat, {-1, 2}));
    } else {
      output(s, "outputs", "outputs", spec(WireDType::kFloat, {-1}));
    }
  }
  return c;
}

// Writes BASE/half_plus_two/{1,2,3} (3 broken, above) and BASE/models.config (every version,
// labels stable -> 1, canary -> 2, as the TestBackend); returns the config file's path.
inline std::string write_conformance_models(const std::string& base) {
  const std::string model = base + "/half_plus_two";
  write_model_dir(conformance_model(3.0f), model + "/1");
  write_model_dir(conformance_model(2.0f), model + "/2");
  write_model_dir(conformance_model(2.0f), model + "/3");
  const std::string weights = model + "/3/" + kWeightsFile;
  std::filesystem::resize_file(weights, std::filesystem::file_size(weights) / 2);
  const std::string config = base + "/models.config";
  std::ofstream(config) << "model_config_list {\n"
                           "  config {\n"
                           "    name: 'half_plus_two'\n"
                           "    base_path: '"
                        << model
                        << "'\n"
                           "    model_platform: 'tensorflow'\n"
                           "    model_version_policy { all {} }\n"
                           "    version_labels { key: 'stable' value: 1 }\n"
                           "    version_labels { key: 'canary' value: 2 }\n"
                           "  }\n"
                           "}\n";
  return config;
}

}  // namespace tern::serve::testing
