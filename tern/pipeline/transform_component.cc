// The transform component (TF Transform): [transform] analyzed over the training split in one pass,
// the transform graph written as an artifact, and every split transformed for training
// (tern/transform: analyze, write_transform_artifact, apply_transform). The artifact folder holds
// transform.toml, analysis.json and transform.tern (the TransformGraph) and
// transformed/<split>/data.tfrecord (one TransformedExamples artifact per split).
#include <filesystem>

#include "tern/base/error.h"
#include "tern/pipeline/components.h"
#include "tern/transform/transform.h"

namespace tern::pipeline {

namespace {

namespace fs = std::filesystem;

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s;
  for (int64_t d : shape) s += str_cat(s.empty() ? "" : ",", d);
  return s;
}

class TransformComponent : public Component {
 public:
  std::string name() const override { return "transform"; }
  std::vector<UpstreamRoles> upstream(const PipelineSpec& spec) const override {
    std::vector<UpstreamRoles> u = {{"ingest", {"examples:"}}};
    if (spec.validate) u.push_back({"validate", {"anomalies"}});  // the gate: no error anomaly
    return u;
  }
  ComponentOutput run(ComponentRun& run) const override {
    transform::TransformSpec spec = transform::parse_transform_spec(run.spec.text, run.spec.path);
    auto train = run.inputs.find("examples:train");
    if (train == run.inputs.end())
      throw_error(ErrorCode::kFailedPrecondition, "transform: no 'train' split from ingest");
    transform::TransformAnalysis analysis =
        transform::analyze(spec, tfrecord_files(train->second.uri));
    transform::write_transform_artifact(spec, analysis, run.dir);
    transform::TransformArtifact artifact = transform::read_transform_artifact(run.dir);
    ComponentOutput out;
    Artifact graph;
    graph.type = "TransformGraph";
    graph.uri = run.dir;
    graph.properties = {{"x_shape", shape_text(artifact.output_shape)},
                        {"x_dim", std::to_string(artifact.output_dim)},
                        {"num_classes", std::to_string(artifact.class_names.size())},
                        {"features", std::to_string(spec.features.size())},
                        {"label", spec.label},
                        {"analyzed_records", std::to_string(analysis.records)}};
    std::vector<RoleArtifact> splits;
    for (const auto& [role, a] : run.inputs) {
      if (role.rfind("examples:", 0) != 0) continue;
      const std::string split = role.substr(9);
      const fs::path dir = fs::path(run.dir) / "transformed" / split;
      const int64_t n = transform::apply_transform(artifact, tfrecord_files(a.uri),
                                                   (dir / "data.tfrecord").string());
      Artifact t;
      t.type = "TransformedExamples";
      t.uri = dir.string();
      t.properties = {{"split", split}, {"records", std::to_string(n)}};
      splits.push_back({"transformed:" + split, t});
    }
    // The graph's folder holds the transformed splits too: record it after them (its hash covers
    // everything the component wrote).
    out.outputs = std::move(splits);
    out.outputs.push_back({"transform", graph});
    Artifacts m;
    for (const auto& o : out.outputs) m[o.role] = o.artifact;
    out.summary = summarize(m);
    return out;
  }
  std::string summarize(const Artifacts& outputs) const override {
    const Artifact& g = outputs.at("transform");
    const std::string n = g.property("features");
    std::string s =
        str_cat(n, n == "1" ? " feature" : " features", " -> x [", g.property("x_shape"), "]");
    if (!g.property("label").empty())
      s += str_cat(", label '", g.property("label"), "' (", g.property("num_classes"), " classes)");
    for (const auto& [split, a] : splits_of(outputs, "transformed:"))
      s += str_cat("; ", split, " ", a->property("records"), " records");
    return s;
  }
};

}  // namespace

std::unique_ptr<Component> make_transform_component() {
  return std::make_unique<TransformComponent>();
}

}  // namespace tern::pipeline
