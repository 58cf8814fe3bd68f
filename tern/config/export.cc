// Config -> export options -> model directory.
#include "tern/config/export.h"

#include "tern/config/builders.h"
#include "tern/config/training_data.h"
#include "tern/data/iterator.h"
#include "tern/data/pipeline_spec.h"

namespace tern::config {
namespace {

bool is_classification(const TrainConfig& cfg) {
  return cfg.loss.name.find("categorical_crossentropy") != std::string::npos;
}

void pipeline_input(const TrainConfig& cfg, serve::RawInput& in) {
  const data::PipelineSpec& spec = cfg.data.pipeline;
  TERN_CHECK_ARG(spec.source.kind != data::SourceKind::kTFRecord, cfg.path,
                 ": export of tfrecord sources is not supported yet (the raw feature would be a "
                 "serialized tf.Example)");
  data::DatasetPtr source =
      data::build_source(spec.source, cfg.data.test_inputs, data::PipelineMode::kEval);
  data::Iterator it = source->make_iterator();
  std::optional<data::Element> first = it.next();
  TERN_CHECK_ARG(first && !first->empty(), cfg.path, ": the test data is empty");
  in.dtype = (*first)[0].dtype();
  in.shape = (*first)[0].shape();
  for (const auto& t : spec.transforms) {
    if (t.kind != data::TransformKind::kMap || t.apply_to == data::ApplyTo::kTrain) continue;
    for (const auto& f : t.fns) {
      if (f.component != 0) continue;
      if (f.kind == data::ElementFnKind::kDecodeImage) {
        TERN_CHECK_ARG(in.preprocessing.empty(), cfg.path,
                       ": decode_image after other functions cannot be exported");
        in.decoder = {serve::DecoderKind::kImage, "", f.channels};
        continue;
      }
      in.preprocessing.push_back(f);
    }
  }
  TERN_CHECK_ARG(in.decoder.kind == serve::DecoderKind::kNone, cfg.path,
                 ": export of encoded-image inputs needs the decoded size, which the config does "
                 "not fix; not supported yet");
}

}  // namespace

serve::ExportOptions export_options(const TrainConfig& cfg) {
  serve::ExportOptions o;
  o.classifier = is_classification(cfg);
  o.input.alias = "images";
  if (cfg.data.uses_pipeline()) {
    pipeline_input(cfg, o.input);
    if (cfg.data.pipeline.source.kind == data::SourceKind::kImageDir)
      o.class_names = cfg.data.pipeline.source.class_names;
    return o;
  }
  // data.dataset: the IDX images as stored (u8 [H, W] per example), scaled in the graph.
  o.input.dtype = DType::kU8;
  o.input.preprocessing = {{.kind = data::ElementFnKind::kScale, .factor = 1.0 / 255}};
  return o;
}

serve::ExportReport export_from_config(const TrainConfig& cfg, const std::string& out_dir,
                                       const std::string& weights_path) {
  serve::ExportOptions o = export_options(cfg);
  Shape sample_shape;
  if (cfg.data.uses_pipeline()) {
    sample_shape = make_training_data(cfg, /*with_train=*/false).sample_shape;
  } else {
    sample_shape = load_data(cfg).sample_shape;
    // The IDX layout: [H, W] for one channel, [H, W, C] otherwise.
    std::vector<int64_t> raw = sample_shape.dims();
    if (raw.size() == 3 && raw[2] == 1) raw.pop_back();
    o.input.shape = Shape(raw);
  }
  std::shared_ptr<nn::Model> model = make_model(cfg, sample_shape);
  model->load_weights(weights_path.empty() ? cfg.output.dir + "/weights.safetensors"
                                           : weights_path);
  return serve::export_model(*model, o, out_dir);
}

}  // namespace tern::config
