// A training config turned into a served model directory (tern/serve/export.h): the config's
// model with its trained weights, and the preprocessing its data section implies, as graph ops.
//   - data.dataset (fashion_mnist, mnist, idx): input `images` u8 [-1, H, W] (the IDX layout),
//     scaled by 1/255 in the graph exactly as data::idx_images_to_f32 does.
//   - a [data] pipeline: the evaluation source's first element gives the raw feature (dtype and
//     per-example shape); the deterministic map functions on component 0 become graph ops,
//     random augmentations are dropped (listed in the report). Image pipelines (an image_dir
//     source that decodes, or a decode_image / read_image map) take encoded JPEG / PNG bytes, a
//     DT_STRING [-1] input: the decode and the geometric steps right after it (the source's
//     resize to image_size, resize, center_crop, random_crop's evaluation form) run before the
//     graph in the signature's image decoder, with the pipeline's own tern/data functions.
//     tfrecord sources take serialized tf.Examples (input `inputs`), parsed by the config's
//     FixedLen feature spec with data::parse_example_record (encoded images inside tf.Example
//     and variable-length features are refused).
// Classifier outputs and the classify signature are added for classification losses.
#pragma once

#include <functional>
#include <string>

#include "tern/config/config.h"
#include "tern/serve/export.h"

namespace tern::config {

// The export options [data] implies for `cfg` (no model needed).
serve::ExportOptions export_options(const TrainConfig& cfg);

// The steps export_from_config reports to its `on_step` callback, in order.
constexpr int kExportSteps = 3 + serve::kExportStages;

// Builds the model, loads `weights_path` (empty: <output.dir>/weights.safetensors), exports to
// `out_dir` (a new version directory). `on_step(k, what)` is called before step k of
// kExportSteps (reading the data's shape, building the model, loading the weights, then
// export_model's stages: tracing the inference graph, the self-check, writing the model
// directory), for a progress line.
serve::ExportReport export_from_config(
    const TrainConfig& cfg, const std::string& out_dir, const std::string& weights_path = "",
    const std::function<void(int step, const std::string& what)>& on_step = {});

}  // namespace tern::config
