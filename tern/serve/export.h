// Exporting a model as a model directory (model_dir.h) with its preprocessing inside: the served
// graph takes raw features (u8 pixels, say), applies the deterministic per-example element
// functions of the training pipeline as graph ops (bit-identical to data/element_fns.h), then
// the model's forward pass. Random augmentations are dropped (their evaluation form is the
// identity) and listed in the report; functions with no graph form (resize, crops) are refused,
// naming the function.
//
//   serve::ExportOptions o;
//   o.input = {.alias = "images", .dtype = DType::kU8, .shape = Shape{28, 28},
//              .preprocessing = {{.kind = data::ElementFnKind::kScale, .factor = 1.0 / 255}}};
//   o.classifier = true;
//   serve::export_model(model, o, "models/fashion/1");
//
// Outputs: `logits` (the model's output as f32); classifiers add `probabilities` (softmax) and
// `classes` (argmax, i64), and a `classify` signature (tf.Example in, `scores` and class-name
// `classes` out) when the raw input is numeric (not with a front graph: class names are then in
// assets/class_names.txt).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "tern/data/element_fns.h"
#include "tern/nn/model.h"
#include "tern/serve/model_dir.h"

namespace tern::serve {

// The raw feature the served model takes and how it becomes the model's input.
struct RawInput {
  std::string alias = "inputs";  // the signature's input name (and the graph input's)
  std::optional<DType> dtype;    // per-example raw dtype (u8 for images); unset = the model's
  Shape shape;                   // per-example raw shape; empty = the model's input shape
  // Element functions applied in order (component 0 only); then a cast and a reshape to the
  // model's input type when the dtype / element count allow.
  std::vector<data::ElementFnSpec> preprocessing;
  // kImage: clients send encoded JPEG / PNG bytes (DT_STRING), decoded (and resized / cropped,
  // model_dir.h's InputDecoder) to `dtype` (default u8) `shape` [H, W, C] before the graph.
  InputDecoder decoder;
};

// Several raw inputs: a graph in front of the model (a data transform, tern/transform). Its
// inputs become the signature's inputs (alias = the input's name, dtype and shape from the graph,
// or DT_STRING [-1] where a decoder turns strings into it); its output `output` is the model's
// input (cast and reshaped to it as for `input`). The graph is rebatched to the trace batch, so
// its reshapes must write the batch as -1. Used instead of `input` when `graph` is set.
struct FrontGraph {
  const ir::Graph* graph = nullptr;
  std::string output = "x";
  std::map<std::string, InputDecoder> decoders;  // graph input -> decoder (e.g. kFingerprint)
  std::set<std::string> nullable;                // graph inputs that take missing values
  std::string description;                       // for assets/preprocessing.json
};

struct ExportOptions {
  RawInput input;
  FrontGraph front;  // set: the model's input comes from this graph (input is unused)
  bool classifier = false;                    // probabilities / classes outputs, classify signature
  std::vector<std::string> class_names;       // default "0", "1", ...
  std::string example_feature = "image";      // the classify signature's tf.Example feature
  std::map<std::string, std::string> assets;  // extra files for assets/
  int64_t trace_batch = 1;                    // the stored graph's batch
  int64_t check_batch = 3;  // the self-check traces here too and compares with rebatch
  // Called before each stage of export_model: "tracing the inference graph", "self-check (...)",
  // "writing the model directory" (kExportStages of them), for a progress line.
  std::function<void(const std::string& stage)> on_stage;
};

constexpr int kExportStages = 3;

struct ExportReport {
  std::string fingerprint;
  std::vector<std::string> dropped;  // random augmentations left out ("random_flip", ...)
  std::vector<std::string> signatures;
};

// The inference graph at `batch`: input `options.input.alias` -> preprocessing -> forward ->
// outputs. Builds the model if needed. `dropped` receives the functions left out.
std::unique_ptr<ir::Graph> trace_inference_graph(nn::Model& model, const ExportOptions& options,
                                                 int64_t batch,
                                                 std::vector<std::string>* dropped = nullptr);

// Traces, self-checks batch polymorphism (FailedPrecondition naming the first differing node),
// writes `dir` atomically (FailedPrecondition if it exists).
ExportReport export_model(nn::Model& model, const ExportOptions& options, const std::string& dir);

}  // namespace tern::serve
