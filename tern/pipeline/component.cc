// Component defaults, external artifacts, and the table of components.
#include "tern/pipeline/component.h"

#include <filesystem>

#include "tern/base/error.h"
#include "tern/pipeline/components.h"
#include "tern/pipeline/content_hash.h"

namespace tern::pipeline {

void Component::add_inputs(const PipelineSpec&, MetadataStore&, Artifacts&) const {}

std::vector<std::string> Component::stop_reasons(const Artifacts&) const { return {}; }

Artifact external_artifact(const std::string& path, const std::string& type) {
  Artifact a;
  a.type = type;
  a.uri = std::filesystem::absolute(path).lexically_normal().string();
  a.content_hash = content_hash(a.uri);
  return a;
}

std::unique_ptr<Component> make_component(const std::string& name) {
  if (name == "push") return make_push_component();
  throw_error(ErrorCode::kUnimplemented, "pipeline component '", name, "' is not available");
}

}  // namespace tern::pipeline
