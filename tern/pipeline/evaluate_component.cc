// The evaluate component (TFX's Evaluator): the trained model exported with the transform in
// front (the candidate: exactly what would be served), loaded through serve::load_servable and fed
// the RAW eval split, so evaluation sees what serving sees; metrics overall, per class and per
// slice; the served model (the latest version under the serving base path that is not this model)
// evaluated on the same data in the same run; the blessing (evaluation.h).
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <nlohmann/json.hpp>

#include "tern/base/error.h"
#include "tern/config/builders.h"
#include "tern/config/config.h"
#include "tern/data/example_proto.h"
#include "tern/data/tfrecord_reader.h"
#include "tern/io/atomic_file.h"
#include "tern/pipeline/components.h"
#include "tern/pipeline/content_hash.h"
#include "tern/pipeline/evaluation.h"
#include "tern/pipeline/push.h"
#include "tern/serve/model_dir.h"
#include "tern/transform/transform.h"

namespace tern::pipeline {

namespace {

namespace fs = std::filesystem;

std::vector<int64_t> parse_shape(const std::string& text) {
  std::vector<int64_t> out;
  std::stringstream ss(text);
  std::string part;
  while (std::getline(ss, part, ',')) out.push_back(std::stoll(part));
  return out;
}

// The raw eval split: the examples, their class indices and slice values.
struct RawEval {
  std::vector<data::Example> examples;
  std::vector<EvalRow> rows;   // logits filled later
  int64_t skipped_labels = 0;  // examples whose label is missing or not a training class
  std::string first_skipped;
};

RawEval read_raw_eval(const std::vector<std::string>& files, const std::string& label,
                      const std::vector<std::string>& class_names,
                      const std::vector<std::string>& slice_by) {
  std::map<std::string, int64_t> class_index;
  for (size_t i = 0; i < class_names.size(); ++i)
    class_index[class_names[i]] = static_cast<int64_t>(i);
  RawEval out;
  for (const std::string& file : files) {
    data::TFRecordReader reader(file);
    int64_t index = 0;
    while (std::optional<std::string> rec = reader.read()) {
      const std::string what = str_cat(file, ": record ", index++);
      data::Example ex = data::parse_example_proto(*rec, what);
      EvalRow row;
      auto lf = ex.features.find(label);
      std::optional<int64_t> cls;
      std::string label_text;
      if (lf != ex.features.end() && lf->second.size() == 1) {
        if (lf->second.kind == data::FeatureKind::kBytes) label_text = lf->second.bytes_list[0];
        if (lf->second.kind == data::FeatureKind::kInt64)
          label_text = std::to_string(lf->second.int64_list[0]);
        if (auto it = class_index.find(label_text); it != class_index.end()) cls = it->second;
      }
      if (!cls) {
        if (out.skipped_labels++ == 0)
          out.first_skipped = str_cat(what, ": label '", label_text, "'");
        continue;
      }
      row.label = *cls;
      for (const std::string& f : slice_by) {
        if (f == "label") {
          row.slices[f] = class_names[static_cast<size_t>(*cls)];
          continue;
        }
        auto it = ex.features.find(f);
        if (it == ex.features.end() || it->second.size() == 0) continue;  // "(missing)"
        const data::Feature& v = it->second;
        if (v.kind == data::FeatureKind::kBytes)
          row.slices[f] = v.bytes_list[0];
        else if (v.kind == data::FeatureKind::kInt64)
          row.slices[f] = std::to_string(v.int64_list[0]);
        else
          throw_error(ErrorCode::kInvalidArgument, "evaluate.slice_by: '", f,
                      "' is a float feature (", what,
                      "): slice by a categorical or integer feature, or \"label\"");
      }
      out.rows.push_back(std::move(row));
      out.examples.push_back(std::move(ex));
    }
  }
  return out;
}

// A batch of raw examples as the signature's inputs (docs/transform.md "Serving").
serve::TensorMap signature_inputs(const serve::Signature& sig,
                                  const std::vector<data::Example>& examples, size_t begin,
                                  size_t end) {
  serve::TensorMap inputs;
  const int64_t b = static_cast<int64_t>(end - begin);
  for (const auto& [alias, spec] : sig.inputs) {
    std::vector<int64_t> shape = spec.shape;
    if (shape.empty())
      throw_error(ErrorCode::kInvalidArgument, "evaluate: signature input '", alias,
                  "' has no batch dimension");
    shape[0] = b;
    int64_t per = 1;
    for (size_t d = 1; d < shape.size(); ++d) {
      if (shape[d] < 0)
        throw_error(ErrorCode::kInvalidArgument, "evaluate: signature input '", alias,
                    "' has an unknown dimension");
      per *= shape[d];
    }
    if (spec.dtype == serve::WireDType::kString) {
      std::vector<std::string> strings;
      for (size_t i = begin; i < end; ++i) {
        auto it = examples[i].features.find(alias);
        strings.push_back(it != examples[i].features.end() &&
                                  it->second.kind == data::FeatureKind::kBytes &&
                                  !it->second.bytes_list.empty()
                              ? it->second.bytes_list[0]
                              : std::string());
      }
      inputs[alias] = serve::TensorValue::from_strings(shape, std::move(strings));
      continue;
    }
    std::optional<DType> dt = serve::tern_dtype_of(spec.dtype);
    if (!dt)
      throw_error(ErrorCode::kInvalidArgument, "evaluate: signature input '", alias, "' of type ",
                  serve::wire_dtype_name(spec.dtype), " cannot be fed from tf.Examples");
    Tensor t(*dt, Shape(shape));
    for (size_t i = begin; i < end; ++i) {
      const int64_t row = static_cast<int64_t>(i - begin);
      auto it = examples[i].features.find(alias);
      const data::Feature* f = it == examples[i].features.end() ? nullptr : &it->second;
      if (*dt == DType::kU8) {
        if (!f || f->kind != data::FeatureKind::kBytes || f->bytes_list.size() != 1 ||
            static_cast<int64_t>(f->bytes_list[0].size()) != per)
          throw_error(ErrorCode::kInvalidArgument, "evaluate: eval example ", i, ": feature '",
                      alias, "' must hold ", per, " raw bytes");
        std::memcpy(t.data<uint8_t>() + row * per, f->bytes_list[0].data(),
                    static_cast<size_t>(per));
        continue;
      }
      for (int64_t k = 0; k < per; ++k) {
        double v = std::numeric_limits<double>::quiet_NaN();  // missing
        if (f && f->kind == data::FeatureKind::kFloat &&
            static_cast<int64_t>(f->float_list.size()) == per)
          v = f->float_list[static_cast<size_t>(k)];
        else if (f && f->kind == data::FeatureKind::kInt64 &&
                 static_cast<int64_t>(f->int64_list.size()) == per)
          v = static_cast<double>(f->int64_list[static_cast<size_t>(k)]);
        else if (f && f->size() != 0)
          throw_error(ErrorCode::kInvalidArgument, "evaluate: eval example ", i, ": feature '",
                      alias, "' holds ", f->size(), " values, the model takes ", per);
        if (*dt == DType::kF32)
          t.data<float>()[row * per + k] = static_cast<float>(v);
        else if (*dt == DType::kF64)
          t.data<double>()[row * per + k] = v;
        else if (*dt == DType::kI64)
          t.data<int64_t>()[row * per + k] = static_cast<int64_t>(v);
        else
          throw_error(ErrorCode::kInvalidArgument, "evaluate: signature input '", alias,
                      "' of type ", serve::wire_dtype_name(spec.dtype), " is not supported");
      }
    }
    inputs[alias] = serve::TensorValue::from_tensor(std::move(t));
  }
  return inputs;
}

// The servable's logits for every example, in batches.
std::vector<std::vector<float>> predict_logits(const serve::Servable& servable,
                                               const std::vector<data::Example>& examples,
                                               int64_t batch) {
  const serve::Signature& sig = servable.signatures().at(serve::kDefaultSignature);
  if (!sig.outputs.count("logits"))
    throw_error(ErrorCode::kInvalidArgument,
                "evaluate: the served signature has no 'logits' output");
  std::vector<std::vector<float>> out;
  for (size_t begin = 0; begin < examples.size(); begin += static_cast<size_t>(batch)) {
    const size_t end = std::min(examples.size(), begin + static_cast<size_t>(batch));
    serve::TensorMap result =
        servable.run(serve::kDefaultSignature, signature_inputs(sig, examples, begin, end));
    const serve::TensorValue& logits = result.at("logits");
    const Tensor t = logits.numbers.to_host();
    const int64_t classes = logits.shape.size() == 2 ? logits.shape[1] : 1;
    for (size_t i = 0; i < end - begin; ++i) {
      std::vector<float> row(static_cast<size_t>(classes));
      for (int64_t c = 0; c < classes; ++c)
        row[static_cast<size_t>(c)] = t.data<float>()[static_cast<int64_t>(i) * classes + c];
      out.push_back(std::move(row));
    }
  }
  return out;
}

class EvaluateComponent : public Component {
 public:
  std::string name() const override { return "evaluate"; }
  std::vector<UpstreamRoles> upstream(const PipelineSpec&) const override {
    return {{"train", {"model"}}, {"transform", {"transform"}}, {"ingest", {"examples:eval"}}};
  }
  // The baseline: the newest version under the serving base path that is not this very model (a
  // version the store records as pushed from the same trained model is skipped).
  void add_inputs(const PipelineSpec& spec, MetadataStore& store,
                  Artifacts& inputs) const override {
    const std::string model_hash = inputs.at("model").content_hash;
    std::vector<int64_t> versions = served_versions(spec.serving_base_path);
    for (auto it = versions.rbegin(); it != versions.rend(); ++it) {
      const std::string path = fs::absolute(fs::path(spec.serving_base_path) / std::to_string(*it))
                                   .lexically_normal()
                                   .string();
      std::optional<std::string> hash = content_hash_if_present(path);
      if (!hash) continue;
      bool same_model = false;
      std::optional<Artifact> pushed;
      for (const Artifact& a : store.artifacts_with_uri(path)) {
        if (a.type != "PushedModel" || a.content_hash != *hash) continue;
        if (a.property("model_hash") == model_hash) same_model = true;
        if (!pushed) pushed = a;
      }
      if (same_model) continue;
      Artifact b = pushed ? *pushed : external_artifact(path, "ServedModel");
      if (!pushed) b.properties["version"] = std::to_string(*it);
      inputs["baseline"] = b;
      return;
    }
  }
  ComponentOutput run(ComponentRun& run) const override {
    const EvaluateSettings& settings = *run.spec.evaluate;
    const Artifact& model_art = run.inputs.at("model");
    auto eval_it = run.inputs.find("examples:eval");
    if (eval_it == run.inputs.end())
      throw_error(ErrorCode::kFailedPrecondition,
                  "evaluate: ingest made no 'eval' split (give [ingest] ratios or splits an eval)");
    transform::TransformArtifact artifact =
        transform::read_transform_artifact(run.inputs.at("transform").uri);
    config::TrainConfig cfg = config::load_config(model_art.uri + "/config.toml");
    std::shared_ptr<nn::Model> model =
        config::make_model(cfg, Shape(parse_shape(model_art.property("x_shape"))));
    model->load_weights(model_art.uri + "/weights.safetensors");
    const std::string candidate = run.dir + "/candidate";
    transform::export_with_transform(*model, artifact, {}, candidate);
    serve::ServablePtr servable = serve::load_servable(candidate);

    RawEval data = read_raw_eval(tfrecord_files(eval_it->second.uri), artifact.spec.label,
                                 artifact.class_names, settings.slice_by);
    std::vector<std::vector<float>> logits =
        predict_logits(*servable, data.examples, settings.batch_size);
    for (size_t i = 0; i < data.rows.size(); ++i) data.rows[i].logits = std::move(logits[i]);

    Evaluation e;
    e.model_name = run.spec.model_name;
    e.overall = compute_metrics(data.rows);
    const auto& wanted = settings.metrics;
    if (std::find(wanted.begin(), wanted.end(), "per_class") != wanted.end())
      e.per_class = per_class_metrics(data.rows, artifact.class_names);
    e.slices = slice_metrics(data.rows, settings.slice_by);
    if (auto b = run.inputs.find("baseline"); b != run.inputs.end()) {
      Baseline base;
      base.version = std::stoll(b->second.property("version", "0"));
      base.path = b->second.uri;
      try {
        serve::ServablePtr served = serve::load_servable(b->second.uri);
        std::vector<EvalRow> rows = data.rows;
        std::vector<std::vector<float>> bl =
            predict_logits(*served, data.examples, settings.batch_size);
        for (size_t i = 0; i < rows.size(); ++i) {
          if (bl[i].size() != rows[i].logits.size())
            throw_error(ErrorCode::kInvalidArgument, "it has ", bl[i].size(), " classes, not ",
                        rows[i].logits.size());
          rows[i].logits = std::move(bl[i]);
        }
        base.metrics = compute_metrics(rows);
      } catch (const Error& err) {
        base.error = err.message();
      }
      e.baseline = base;
    }
    decide_blessing(settings, e);
    if (data.skipped_labels > 0)
      e.reason += str_cat("; ", data.skipped_labels,
                          " eval examples skipped (label missing or "
                          "not a training class; first: ",
                          data.first_skipped, ")");

    const std::string eval_dir = run.dir + "/evaluation";
    fs::create_directories(eval_dir);
    io::write_file_atomically(eval_dir + "/evaluation.json", evaluation_json(e, settings));
    io::write_file_atomically(eval_dir + "/evaluation.md", evaluation_markdown(e, settings));
    const std::string blessing_dir = run.dir + "/blessing";
    fs::create_directories(blessing_dir);
    io::write_file_atomically(blessing_dir + (e.blessed ? "/BLESSED" : "/NOT_BLESSED"),
                              e.reason + "\n");

    auto fixed = [](double v) { return str_cat(std::round(v * 10000) / 10000); };
    Artifact evaluation;
    evaluation.type = "ModelEvaluation";
    evaluation.uri = eval_dir;
    evaluation.properties = {{"accuracy", fixed(e.overall.accuracy)},
                             {"loss", fixed(e.overall.loss)},
                             {"examples", std::to_string(e.overall.count)},
                             {"report", eval_dir + "/evaluation.md"}};
    if (e.baseline) {
      evaluation.properties["baseline_version"] = std::to_string(e.baseline->version);
      if (e.baseline->metrics)
        evaluation.properties["baseline_accuracy"] = fixed(e.baseline->metrics->accuracy);
    }
    Artifact exported;
    exported.type = "ExportedModel";
    exported.uri = candidate;
    exported.properties = {{"fingerprint", servable->fingerprint()}};
    Artifact blessing;
    blessing.type = "ModelBlessing";
    blessing.uri = blessing_dir;
    blessing.properties = {{"blessed", e.blessed ? "1" : "0"}, {"reason", e.reason}};
    ComponentOutput out;
    out.outputs = {{"evaluation", evaluation}, {"candidate", exported}, {"blessing", blessing}};
    out.summary = summarize({{"evaluation", evaluation}, {"blessing", blessing}});
    return out;
  }
  std::string summarize(const Artifacts& outputs) const override {
    const Artifact& ev = outputs.at("evaluation");
    const Artifact& bl = outputs.at("blessing");
    std::string s = str_cat("accuracy ", ev.property("accuracy"), ", loss ", ev.property("loss"),
                            " on ", ev.property("examples"), " raw eval examples");
    if (!ev.property("baseline_accuracy").empty())
      s += str_cat(" (served version ", ev.property("baseline_version"), ": ",
                   ev.property("baseline_accuracy"), ")");
    return s + (bl.property("blessed") == "1" ? "; blessed"
                                              : "; NOT blessed: " + bl.property("reason"));
  }
};

}  // namespace

std::unique_ptr<Component> make_evaluate_component() {
  return std::make_unique<EvaluateComponent>();
}

}  // namespace tern::pipeline
