// Config -> export options -> model directory.
#include "tern/config/export.h"

#include <algorithm>

#include "tern/config/builders.h"
#include "tern/config/training_data.h"
#include "tern/data/iterator.h"
#include "tern/data/pipeline_spec.h"

namespace tern::config {
namespace {

bool is_classification(const TrainConfig& cfg) {
  return cfg.loss.name.find("categorical_crossentropy") != std::string::npos;
}

// True for a preprocessing step that changes the values (not an evaluation-time identity).
bool changes_values(const data::ElementFnSpec& f) {
  return !data::element_fn_is_identity_in_eval(f.kind);
}

// The raw feature of a [data] pipeline. Image pipelines (an image_dir source that decodes, or a
// decode_image / read_image map) take encoded images: the decode and the geometric steps right
// after it (resize, center_crop; random_crop in its evaluation form, a center crop) go into the
// signature's image decoder, which runs the same tern/data functions; the rest become graph ops.
void pipeline_input(const TrainConfig& cfg, serve::RawInput& in) {
  const data::PipelineSpec& spec = cfg.data.pipeline;
  data::DatasetPtr source =
      data::build_source(spec.source, cfg.data.test_inputs, data::PipelineMode::kEval);
  data::Iterator it = source->make_iterator();
  std::optional<data::Element> first = it.next();
  TERN_CHECK_ARG(first && !first->empty(), cfg.path, ": the test data is empty");
  // `e` follows the decoder's steps (parse, decode, resize, crop) to give the graph input's dtype
  // and per-example shape.
  data::Element e = *first;
  const bool tfrecord = spec.source.kind == data::SourceKind::kTFRecord;
  if (tfrecord) {
    // Serialized tf.Example in, parsed by the config's feature spec for the model input.
    TERN_CHECK_ARG(!spec.source.features.empty(), cfg.path, ": tfrecord source without features");
    const data::FeatureSpec& f = spec.source.features[0];
    TERN_CHECK_ARG(!f.var_len, cfg.path, ": export of the variable-length feature '", f.name,
                   "' is not supported (the model input needs a fixed shape)");
    TERN_CHECK_ARG(!(f.kind == data::FeatureKind::kBytes && f.shape.empty()), cfg.path,
                   ": export of the encoded bytes feature '", f.name,
                   "' is not supported yet (decoding images inside tf.Example)");
    in.alias = "inputs";
    in.decoder = {.kind = serve::DecoderKind::kExample, .feature = f.name, .example_spec = {f}};
    const Tensor& record = e[0];
    e = data::parse_example_record(std::string_view(static_cast<const char*>(record.raw_data()),
                                                    static_cast<size_t>(record.nbytes())),
                                   spec.source.features);
  }
  if (spec.source.kind == data::SourceKind::kImageDir && spec.source.decode) {
    in.decoder.kind = serve::DecoderKind::kImage;
    in.decoder.channels = spec.source.channels;
    in.decoder.height = spec.source.image_height;
    in.decoder.width = spec.source.image_width;
    in.decoder.method = spec.source.interpolation;
  }
  auto has_value_steps = [&] {
    return std::any_of(in.preprocessing.begin(), in.preprocessing.end(), changes_values);
  };
  for (const auto& t : spec.transforms) {
    if (t.kind != data::TransformKind::kMap || t.apply_to == data::ApplyTo::kTrain) continue;
    for (const auto& f : t.fns) {
      if (f.component != 0) continue;
      const std::string name = data::element_fn_name(f.kind);
      if (f.kind == data::ElementFnKind::kDecodeImage ||
          f.kind == data::ElementFnKind::kReadImage) {
        TERN_CHECK_ARG(!tfrecord, cfg.path, ": export of ", name,
                       " on a tf.Example feature is not supported yet");
        TERN_CHECK_ARG(in.decoder.kind == serve::DecoderKind::kNone && in.preprocessing.empty(),
                       cfg.path, ": ", name, " after other functions cannot be exported");
        in.decoder = {.kind = serve::DecoderKind::kImage, .channels = f.channels};
        e = data::apply_element_fn(f, std::move(e), 0, /*training=*/false);
        continue;
      }
      const bool geometric = f.kind == data::ElementFnKind::kResize ||
                             f.kind == data::ElementFnKind::kCenterCrop ||
                             f.kind == data::ElementFnKind::kRandomCrop;
      if (geometric && in.decoder.kind == serve::DecoderKind::kImage) {
        TERN_CHECK_ARG(!has_value_steps(), cfg.path, ": ", name,
                       " after value-changing functions cannot be exported (the served model "
                       "decodes, resizes and crops before the graph); put it right after the "
                       "decode");
        data::ElementFnSpec step = f;
        if (step.kind == data::ElementFnKind::kRandomCrop)  // its evaluation form
          step.kind = data::ElementFnKind::kCenterCrop;
        e = data::apply_element_fn(step, std::move(e), 0, /*training=*/false);
        in.decoder.steps.push_back(step);
        continue;
      }
      in.preprocessing.push_back(f);
    }
  }
  in.dtype = e[0].dtype();
  in.shape = e[0].shape();
  if (in.decoder.kind == serve::DecoderKind::kImage)
    TERN_CHECK_ARG(in.shape.rank() == 3, cfg.path, ": decoded images are ", in.shape,
                   "; export needs [H, W, C]");
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

serve::ExportReport export_from_config(
    const TrainConfig& cfg, const std::string& out_dir, const std::string& weights_path,
    const std::function<void(int step, const std::string& what)>& on_step) {
  auto step = [&](int k, const char* what) {
    if (on_step) on_step(k, what);
  };
  serve::ExportOptions o = export_options(cfg);
  Shape sample_shape;
  step(1, "reading the data's shape");
  if (cfg.data.uses_pipeline()) {
    sample_shape = make_training_data(cfg, /*with_train=*/false).sample_shape;
  } else {
    sample_shape = load_data(cfg).sample_shape;
    // The IDX layout: [H, W] for one channel, [H, W, C] otherwise.
    std::vector<int64_t> raw = sample_shape.dims();
    if (raw.size() == 3 && raw[2] == 1) raw.pop_back();
    o.input.shape = Shape(raw);
  }
  step(2, "building the model");
  std::shared_ptr<nn::Model> model = make_model(cfg, sample_shape);
  step(3, "loading the weights");
  model->load_weights(weights_path.empty() ? cfg.output.dir + "/weights.safetensors"
                                           : weights_path);
  int k = 3;
  o.on_stage = [&](const std::string& what) {
    if (on_step) on_step(++k, what);
  };
  return serve::export_model(*model, o, out_dir);
}

}  // namespace tern::config
