// Lineage: target resolution, the upstream walk through producers and inputs, text and JSON.
#include "tern/pipeline/lineage.h"

#include <charconv>
#include <ctime>
#include <filesystem>
#include <functional>
#include <iomanip>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "tern/base/error.h"
#include "tern/pipeline/content_hash.h"

namespace tern::pipeline {

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

std::optional<int64_t> parse_id(std::string_view s) {
  int64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || v <= 0) return std::nullopt;
  return v;
}

std::string iso_time(int64_t ms) {
  if (ms <= 0) return "-";
  std::time_t t = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  gmtime_r(&t, &tm);
  std::ostringstream os;
  os << std::put_time(&tm, "%Y-%m-%dT%H:%M:%SZ");
  return os.str();
}

struct Seen {
  std::set<int64_t> artifacts, executions;
};

void walk(MetadataStore& store, LineageNode& node, Seen& seen) {
  if (node.role == "baseline" || node.role == "previous_statistics") {
    node.reference = true;
    return;
  }
  if (!seen.artifacts.insert(node.artifact.id).second) {
    node.shown_above = true;
    return;
  }
  node.producer = store.producer(node.artifact.id);
  if (!node.producer) return;
  if (!seen.executions.insert(node.producer->id).second) {
    node.producer_shown_above = true;
    return;
  }
  for (const Context& c : store.contexts_of_execution(node.producer->id)) {
    if (c.type == "run") node.run = c.name;
  }
  for (auto& [event, artifact] : store.events_of_execution(node.producer->id, EventType::kInput)) {
    LineageNode child;
    child.role = event.role;
    child.artifact = std::move(artifact);
    walk(store, child, seen);
    node.inputs.push_back(std::move(child));
  }
}

std::string properties_text(const Artifact& a) {
  std::string s;
  for (const auto& [k, v] : a.properties) s += str_cat(s.empty() ? "" : ", ", k, "=", v);
  return s;
}

void write_text(const LineageNode& n, int depth, std::ostringstream& os) {
  const std::string pad(static_cast<size_t>(depth) * 4, ' ');
  os << pad << (n.role.empty() ? "" : n.role + ": ") << n.artifact.type << " #" << n.artifact.id
     << "  " << n.artifact.uri;
  if (n.artifact.state != ArtifactState::kLive)
    os << "  [" << artifact_state_name(n.artifact.state) << "]";
  os << "\n";
  if (n.shown_above) {
    os << pad << "  (shown above)\n";
    return;
  }
  if (n.reference) {
    os << pad << "  ("
       << (n.role == "baseline" ? "the served model it was compared with"
                                : "the previous run's statistics")
       << ": its own lineage is `tern pipeline lineage ROOT " << n.artifact.id << "`)\n";
    return;
  }
  os << pad << "  sha256 " << n.artifact.content_hash.substr(0, 16) << "..., created "
     << iso_time(n.artifact.create_time_ms) << "\n";
  if (!n.artifact.properties.empty()) os << pad << "  " << properties_text(n.artifact) << "\n";
  if (!n.producer) {
    if (!n.role.empty()) os << pad << "  (external input)\n";
    return;
  }
  const Execution& x = *n.producer;
  if (n.producer_shown_above) {
    os << pad << "  <- " << x.component << " (execution #" << x.id << ", shown above)\n";
    return;
  }
  os << pad << "  <- " << x.component << " (execution #" << x.id << ", "
     << execution_state_name(x.state) << ", " << iso_time(x.start_time_ms)
     << (n.run.empty() ? "" : ", run " + n.run) << ")" << (x.message.empty() ? "" : ": ")
     << x.message << "\n";
  for (const LineageNode& c : n.inputs) write_text(c, depth + 1, os);
}

json artifact_json(const Artifact& a) {
  return {{"id", a.id},
          {"type", a.type},
          {"uri", a.uri},
          {"content_hash", a.content_hash},
          {"state", artifact_state_name(a.state)},
          {"create_time", iso_time(a.create_time_ms)},
          {"properties", a.properties}};
}

json node_json(const LineageNode& n) {
  json j = {{"role", n.role}, {"artifact", artifact_json(n.artifact)}};
  if (n.reference) {
    j["reference"] = true;
    return j;
  }
  if (n.shown_above) {
    j["shown_above"] = true;
    return j;
  }
  if (n.producer && n.producer_shown_above) {
    j["produced_by"] = {
        {"execution", {{"id", n.producer->id}, {"component", n.producer->component}}},
        {"shown_above", true}};
  } else if (n.producer) {
    const Execution& x = *n.producer;
    json inputs = json::array();
    for (const LineageNode& c : n.inputs) inputs.push_back(node_json(c));
    json settings = json::parse(x.settings_json, nullptr, /*allow_exceptions=*/false);
    j["produced_by"] = {{"execution",
                         {{"id", x.id},
                          {"component", x.component},
                          {"state", execution_state_name(x.state)},
                          {"cache_key", x.cache_key},
                          {"settings", settings.is_discarded() ? json(x.settings_json) : settings},
                          {"start_time", iso_time(x.start_time_ms)},
                          {"end_time", iso_time(x.end_time_ms)},
                          {"message", x.message}}},
                        {"run", n.run},
                        {"inputs", inputs}};
  }
  return j;
}

void collect(const LineageNode& n, std::vector<const LineageNode*>& out) {
  if (n.shown_above || n.reference) return;
  out.push_back(&n);
  for (const LineageNode& c : n.inputs) collect(c, out);
}

// The artifact kinds in the order the summary lists them, with their labels.
const std::vector<std::pair<std::string, std::string>>& summary_kinds() {
  static const std::vector<std::pair<std::string, std::string>> kKinds = {
      {"PushedModel", "pushed version"},
      {"ExportedModel", "exported model"},
      {"ModelBlessing", "blessing"},
      {"ModelEvaluation", "evaluation"},
      {"ServedModel", "served baseline"},
      {"Model", "model"},
      {"TrainingConfig", "training config"},
      {"TransformGraph", "transform"},
      {"TransformedExamples", "transformed data"},
      {"ExampleAnomalies", "anomalies"},
      {"Schema", "schema"},
      {"PinnedSchema", "pinned schema"},
      {"ExampleStatistics", "statistics"},
      {"Examples", "data split"},
      {"ExternalFile", "raw input"}};
  return kKinds;
}

// The properties worth a summary line, by type.
std::string summary_properties(const Artifact& a) {
  static const std::map<std::string, std::vector<std::string>> kKeys = {
      {"PushedModel", {"version", "model_name"}},
      {"ExportedModel", {"fingerprint"}},
      {"ModelBlessing", {"blessed", "reason"}},
      {"ModelEvaluation",
       {"accuracy", "loss", "examples", "baseline_version", "baseline_accuracy"}},
      {"Model", {"epochs", "eval_accuracy", "config"}},
      {"TransformGraph", {"features", "x_shape", "label", "num_classes"}},
      {"TransformedExamples", {"split", "records"}},
      {"ExampleAnomalies", {"errors", "warnings"}},
      {"Schema", {"features", "pinned"}},
      {"ExampleStatistics", {"features", "splits"}},
      {"Examples", {"split", "records"}},
      {"ServedModel", {"version"}}};
  std::string s;
  auto it = kKeys.find(a.type);
  if (it == kKeys.end()) return s;
  for (const std::string& k : it->second) {
    std::string v = a.property(k);
    if (v.empty()) continue;
    if (k == "blessed") v = v == "1" ? "yes" : "no";
    s += str_cat(s.empty() ? "" : ", ", k, " ", v);
  }
  return s;
}

}  // namespace

int64_t resolve_lineage_target(MetadataStore& store, const std::string& target) {
  if (target.rfind("serving:", 0) == 0) {
    const std::string v = target.substr(8);
    if (!parse_id(v))
      throw_error(ErrorCode::kInvalidArgument, "lineage target '", target,
                  "': expected serving:VERSION (a positive number)");
    std::vector<Artifact> pushed = store.artifacts_with_property("PushedModel", "version", v);
    if (pushed.empty()) {
      std::set<int64_t> known;
      for (const Artifact& a : store.artifacts_of_type("PushedModel"))
        known.insert(std::stoll(a.property("version", "0")));
      std::string list;
      for (int64_t k : known) list += str_cat(list.empty() ? "" : ", ", k);
      throw_error(
          ErrorCode::kNotFound, "lineage: no pushed version ", v, " in ", store.path(),
          known.empty() ? " (nothing was pushed)" : str_cat(" (pushed versions: ", list, ")"));
    }
    // A version number reused after its folder was deleted: the one on disk now, else the newest.
    for (const Artifact& a : pushed) {
      if (content_hash_if_present(a.uri) == a.content_hash) return a.id;
    }
    return pushed.front().id;
  }
  std::string id_text = target.rfind("artifact:", 0) == 0 ? target.substr(9) : target;
  if (std::optional<int64_t> id = parse_id(id_text)) {
    if (!store.artifact(*id))
      throw_error(ErrorCode::kNotFound, "lineage: no artifact ", *id, " in ", store.path());
    return *id;
  }
  if (target.rfind("artifact:", 0) == 0)
    throw_error(ErrorCode::kInvalidArgument, "lineage target '", target,
                "': expected artifact:ID (a positive number)");
  // A path: the newest artifact recorded at that uri.
  const std::string uri = fs::absolute(target).lexically_normal().string();
  std::vector<Artifact> at = store.artifacts_with_uri(uri);
  if (at.empty())
    throw_error(ErrorCode::kNotFound, "lineage: '", target,
                "' is not serving:VERSION, an artifact id, or the path of an artifact in ",
                store.path());
  return at.front().id;
}

LineageNode lineage(MetadataStore& store, int64_t artifact_id) {
  std::optional<Artifact> a = store.artifact(artifact_id);
  if (!a) throw_error(ErrorCode::kNotFound, "lineage: no artifact ", artifact_id);
  LineageNode root;
  root.artifact = std::move(*a);
  Seen seen;
  walk(store, root, seen);
  return root;
}

std::string lineage_text(const LineageNode& root) {
  std::vector<const LineageNode*> all;
  collect(root, all);
  std::ostringstream os;
  os << root.artifact.type << " #" << root.artifact.id << " (" << root.artifact.uri
     << ") came from:\n";
  for (const auto& [type, label] : summary_kinds()) {
    for (const LineageNode* n : all) {
      if (n->artifact.type != type || n == &root) continue;
      const std::string props = summary_properties(n->artifact);
      os << "  " << std::left << std::setw(17) << label << " #" << n->artifact.id << "  "
         << n->artifact.uri << (props.empty() ? "" : "  (" + props + ")") << "\n";
    }
  }
  std::vector<const LineageNode*> refs;
  std::function<void(const LineageNode&)> find_refs = [&](const LineageNode& n) {
    if (n.reference) refs.push_back(&n);
    if (n.shown_above) return;
    for (const LineageNode& c : n.inputs) find_refs(c);
  };
  find_refs(root);
  for (const LineageNode* n : refs) {
    const std::string props = summary_properties(n->artifact);
    os << "  " << std::left << std::setw(17)
       << (n->role == "baseline" ? "compared with" : "previous stats") << " #" << n->artifact.id
       << "  " << n->artifact.uri << (props.empty() ? "" : "  (" + props + ")") << "\n";
  }
  os << "\nchain (each artifact, then <- the execution that produced it and its inputs):\n";
  write_text(root, 0, os);
  return os.str();
}

std::string lineage_json(const LineageNode& root) {
  std::vector<const LineageNode*> all;
  collect(root, all);
  json summary = json::object();
  for (const LineageNode* n : all) summary[n->artifact.type].push_back(n->artifact.id);
  json j = node_json(root);
  j["summary"] = summary;
  return j.dump(2) + "\n";
}

}  // namespace tern::pipeline
