// The push component (TFX's Pusher): a blessed candidate (evaluate's exported model) is copied to
// the serving base path as the next version (push.h); an unblessed one is not pushed.
#include <filesystem>

#include "tern/base/error.h"
#include "tern/pipeline/components.h"
#include "tern/pipeline/push.h"

namespace tern::pipeline {
namespace {

class PushComponent : public Component {
 public:
  std::string name() const override { return "push"; }
  std::vector<UpstreamRoles> upstream(const PipelineSpec&) const override {
    return {{"evaluate", {"candidate", "blessing", "evaluation"}}, {"train", {"model"}}};
  }
  ComponentOutput run(ComponentRun& run) const override {
    const Artifact& blessing = run.inputs.at("blessing");
    const Artifact& candidate = run.inputs.at("candidate");
    ComponentOutput out;
    if (!run.spec.push->enabled) {
      out.summary = "not pushed: [push] enabled = false";
      return out;
    }
    if (blessing.property("blessed") != "1") {
      out.summary =
          str_cat("not pushed: the model is not blessed (", blessing.property("reason"), ")");
      return out;
    }
    PushResult r = push_model(candidate.uri, run.spec.serving_base_path);
    Artifact pushed;
    pushed.type = "PushedModel";
    pushed.uri = std::filesystem::absolute(r.path).lexically_normal().string();
    pushed.properties = {
        {"version", std::to_string(r.version)},
        {"model_name", run.spec.model_name},
        {"model_hash", run.inputs.count("model") ? run.inputs.at("model").content_hash : ""}};
    out.outputs.push_back({"pushed", pushed});
    out.summary = str_cat("pushed version ", r.version, " to ", r.path);
    return out;
  }
  std::string summarize(const Artifacts& outputs) const override {
    auto it = outputs.find("pushed");
    if (it == outputs.end()) return "not pushed (the model was not blessed)";
    return str_cat("version ", it->second.property("version"), " at ", it->second.uri);
  }
};

}  // namespace

std::unique_ptr<Component> make_push_component() {
  return std::make_unique<PushComponent>();
}

}  // namespace tern::pipeline
