// Component defaults, external artifacts, and the table of components.
#include "tern/pipeline/component.h"

#include <algorithm>
#include <filesystem>

#include "tern/base/error.h"
#include "tern/pipeline/components.h"
#include "tern/pipeline/content_hash.h"

namespace tern::pipeline {

void Component::add_inputs(const PipelineSpec&, MetadataStore&, Artifacts&) const {}

std::vector<std::string> Component::stop_reasons(const Artifacts&) const {
  return {};
}

Artifact external_artifact(const std::string& path, const std::string& type) {
  Artifact a;
  a.type = type;
  a.uri = std::filesystem::absolute(path).lexically_normal().string();
  a.content_hash = content_hash(a.uri);
  return a;
}

std::vector<std::pair<std::string, const Artifact*>> splits_of(const Artifacts& artifacts,
                                                               const std::string& prefix) {
  std::vector<std::pair<std::string, const Artifact*>> out;
  for (const auto& [role, a] : artifacts) {
    if (role.rfind(prefix, 0) == 0) out.emplace_back(role.substr(prefix.size()), &a);
  }
  std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) {
    return (a.first == "train") > (b.first == "train");
  });
  return out;
}

std::unique_ptr<Component> make_component(const std::string& name) {
  if (name == "ingest") return make_ingest_component();
  if (name == "statistics") return make_statistics_component();
  if (name == "schema") return make_schema_component();
  if (name == "validate") return make_validate_component();
  if (name == "transform") return make_transform_component();
  if (name == "train") return make_train_component();
  if (name == "evaluate") return make_evaluate_component();
  if (name == "push") return make_push_component();
  throw_error(ErrorCode::kInvalidArgument, "no pipeline component '", name, "'");
}

}  // namespace tern::pipeline
