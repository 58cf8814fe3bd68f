// export_with_transform: the transform graph as the served model's front graph.
#include "tern/transform/export.h"

#include "tern/base/error.h"
#include "tern/transform/graph.h"

namespace tern::transform {

serve::ExportOptions transform_export_options(const TransformArtifact& a,
                                              const TransformExportOptions& options) {
  TERN_CHECK_ARG(a.graph != nullptr, "export_with_transform: the artifact has no graph");
  serve::ExportOptions o;
  o.front.graph = a.graph.get();
  o.front.output = kTransformOutput;
  o.front.description = "tern transform (assets/transform.toml, assets/transform_analysis.json)";
  for (const auto& f : a.spec.raw_features()) {
    if (f.kind == RawKind::kCategorical) {
      o.front.decoders[f.name] = {.kind = serve::DecoderKind::kFingerprint};
    }
    if (f.kind != RawKind::kImage) o.front.nullable.insert(f.name);
  }
  o.classifier = options.classifier;
  o.class_names = options.class_names.empty() ? a.class_names : options.class_names;
  o.assets = options.assets;
  o.assets["transform.toml"] = a.spec.toml;
  o.assets["transform_analysis.json"] = analysis_to_json(a.analysis);
  o.trace_batch = options.trace_batch;
  o.check_batch = options.check_batch;
  return o;
}

serve::ExportReport export_with_transform(nn::Model& model, const TransformArtifact& a,
                                          const TransformExportOptions& options,
                                          const std::string& dir) {
  return serve::export_model(model, transform_export_options(a, options), dir);
}

}  // namespace tern::transform
