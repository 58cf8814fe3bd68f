// The data components, around tern/pipeline's ingest, statistics, schema and validation
// (ingest.h, statistics.h, stats_report.h, schema.h, validate.h): what each reads and writes as
// artifacts, and the lines they print.
#include <algorithm>
#include <filesystem>
#include <sstream>

#include "tern/base/error.h"
#include "tern/io/atomic_file.h"
#include "tern/pipeline/components.h"
#include "tern/pipeline/content_hash.h"
#include "tern/pipeline/ingest.h"
#include "tern/pipeline/schema.h"
#include "tern/pipeline/statistics.h"
#include "tern/pipeline/stats_report.h"
#include "tern/pipeline/validate.h"

namespace tern::pipeline {

namespace fs = std::filesystem;

// The TFRecord files of a split folder, sorted.
std::vector<std::string> tfrecord_files(const std::string& dir) {
  std::vector<std::string> files;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (e.is_regular_file() && e.path().extension() == ".tfrecord")
      files.push_back(e.path().string());
  }
  if (ec) throw_error(ErrorCode::kNotFound, dir, ": cannot list the split: ", ec.message());
  std::sort(files.begin(), files.end());
  if (files.empty()) throw_error(ErrorCode::kNotFound, dir, ": no .tfrecord files");
  return files;
}

namespace {

// --- ingest ---

class IngestComponent : public Component {
 public:
  std::string name() const override { return "ingest"; }
  std::vector<UpstreamRoles> upstream(const PipelineSpec&) const override { return {}; }
  void add_inputs(const PipelineSpec& spec, MetadataStore&, Artifacts& inputs) const override {
    const IngestSettings& g = *spec.ingest;
    for (size_t i = 0; i < g.paths.size(); ++i)
      inputs[str_cat("input:", i)] = external_artifact(g.paths[i]);
    if (!g.labels.empty()) inputs["input:labels"] = external_artifact(g.labels);
    for (const auto& [split, files] : g.split_files) {
      for (size_t i = 0; i < files.size(); ++i)
        inputs[str_cat("input:", split, ":", i)] = external_artifact(files[i]);
    }
  }
  ComponentOutput run(ComponentRun& run) const override {
    const IngestSettings& g = *run.spec.ingest;
    IngestOptions o;
    o.format = g.format;
    o.paths = g.paths;
    o.labels = g.labels;
    o.column_types = g.column_types;
    if (g.split_files.empty()) o.ratios = g.ratios;  // else each split has its own files
    o.split_key = g.split_key;
    o.split_files = g.split_files;
    o.shards = g.shards;
    o.csv_delimiter = g.delimiter[0];
    ComponentOutput out;
    for (const SplitInfo& s : ingest(o, run.dir)) {
      Artifact a;
      a.type = "Examples";
      a.uri = (fs::path(run.dir) / s.name).string();
      a.properties = {{"split", s.name},
                      {"records", std::to_string(s.records)},
                      {"bytes", std::to_string(s.bytes)},
                      {"files", std::to_string(s.files.size())}};
      out.outputs.push_back({"examples:" + s.name, a});
    }
    Artifacts m;
    for (const auto& o2 : out.outputs) m[o2.role] = o2.artifact;
    out.summary = summarize(m);
    return out;
  }
  std::string summarize(const Artifacts& outputs) const override {
    std::string s;
    for (const auto& [split, a] : splits_of(outputs, "examples:"))
      s += str_cat(s.empty() ? "" : ", ", split, " ", a->property("records"), " records");
    return s;
  }
};

// --- statistics ---

class StatisticsComponent : public Component {
 public:
  std::string name() const override { return "statistics"; }
  std::vector<UpstreamRoles> upstream(const PipelineSpec&) const override {
    return {{"ingest", {"examples:"}}};
  }
  ComponentOutput run(ComponentRun& run) const override {
    const StatisticsSettings& g = *run.spec.statistics;
    StatisticsOptions o;
    o.top_k = static_cast<int>(g.top_k);
    o.histogram_bins = static_cast<int>(g.histogram_bins);
    o.quantiles = g.quantiles;
    o.max_value_counts = g.max_value_counts;
    std::vector<std::pair<std::string, DatasetStatistics>> all;
    for (const auto& [split, a] : splits_of(run.inputs, "examples:")) {
      DatasetStatistics st = compute_statistics(tfrecord_files(a->uri), o);
      fs::create_directories(fs::path(run.dir) / split);
      io::write_file_atomically((fs::path(run.dir) / split / "statistics.json").string(),
                                statistics_to_json(st));
      all.emplace_back(split, std::move(st));
    }
    std::vector<std::pair<std::string, const DatasetStatistics*>> views;
    for (const auto& [split, st] : all) views.emplace_back(split, &st);
    write_statistics_report(views, (fs::path(run.dir) / "report.html").string());
    Artifact a;
    a.type = "ExampleStatistics";
    a.uri = run.dir;
    std::string splits;
    for (const auto& [split, st] : all) {
      splits += (splits.empty() ? "" : ",") + split;
      a.properties["examples:" + split] = std::to_string(st.examples);
    }
    a.properties["splits"] = splits;
    a.properties["features"] = std::to_string(all.empty() ? 0 : all.front().second.features.size());
    a.properties["report"] = (fs::path(run.dir) / "report.html").string();
    ComponentOutput out;
    out.outputs.push_back({"statistics", a});
    out.summary = summarize({{"statistics", a}});
    return out;
  }
  std::string summarize(const Artifacts& outputs) const override {
    const Artifact& a = outputs.at("statistics");
    std::string s = str_cat(a.property("features"), " features");
    std::stringstream splits(a.property("splits"));
    for (std::string split; std::getline(splits, split, ',');)
      s += str_cat(", ", split, " ", a.property("examples:" + split), " examples");
    return s + "; report " + a.property("report");
  }
};

// --- schema ---

class SchemaComponent : public Component {
 public:
  std::string name() const override { return "schema"; }
  std::vector<UpstreamRoles> upstream(const PipelineSpec& spec) const override {
    if (!spec.schema->path.empty()) return {};
    return {{"statistics", {"statistics"}}};
  }
  void add_inputs(const PipelineSpec& spec, MetadataStore&, Artifacts& inputs) const override {
    if (!spec.schema->path.empty())
      inputs["pinned_schema"] = external_artifact(spec.schema->path, "PinnedSchema");
  }
  ComponentOutput run(ComponentRun& run) const override {
    const SchemaSettings& g = *run.spec.schema;
    const std::string out_file = (fs::path(run.dir) / "schema.toml").string();
    Schema schema;
    Artifact a;
    if (!g.path.empty()) {
      const std::string text = io::read_file(g.path, 16 << 20);
      schema = parse_schema(text, g.path);  // checked: file:line: key
      io::write_file_atomically(out_file, text);
      a.properties["pinned"] = g.path;
    } else {
      SchemaOptions o;
      o.required_fraction = g.required_fraction;
      o.max_domain_size = g.max_domain_size;
      o.threshold = g.threshold;
      schema = infer_schema(
          read_statistics_json(run.inputs.at("statistics").uri + "/train/statistics.json"), o);
      io::write_file_atomically(out_file, schema_to_toml(schema));
    }
    a.type = "Schema";
    a.uri = run.dir;
    a.properties["features"] = std::to_string(schema.features.size());
    a.properties["file"] = out_file;
    ComponentOutput out;
    out.outputs.push_back({"schema", a});
    out.summary = summarize({{"schema", a}});
    return out;
  }
  std::string summarize(const Artifacts& outputs) const override {
    const Artifact& a = outputs.at("schema");
    return str_cat(a.property("features"), " features, ",
                   a.property("pinned").empty() ? "inferred" : "pinned " + a.property("pinned"),
                   ": ", a.property("file"));
  }
};

// --- validate ---

std::string anomaly_line(const Anomaly& a) {
  return str_cat(a.kind, " (", a.split, "): ", a.message);
}

class ValidateComponent : public Component {
 public:
  std::string name() const override { return "validate"; }
  std::vector<UpstreamRoles> upstream(const PipelineSpec&) const override {
    return {{"statistics", {"statistics"}}, {"schema", {"schema"}}};
  }
  // The previous run's statistics: the newest other statistics artifact still on disk.
  void add_inputs(const PipelineSpec& spec, MetadataStore& store,
                  Artifacts& inputs) const override {
    if (!spec.validate->compare_previous) return;
    const Artifact& current = inputs.at("statistics");
    for (const Artifact& a : store.artifacts_of_type("ExampleStatistics")) {
      if (a.id == current.id || a.content_hash == current.content_hash) continue;
      if (!store.producer(a.id)) continue;
      if (content_hash_if_present(a.uri) != a.content_hash) continue;
      inputs["previous_statistics"] = a;
      return;
    }
  }
  ComponentOutput run(ComponentRun& run) const override {
    const std::string stats = run.inputs.at("statistics").uri;
    DatasetStatistics train = read_statistics_json(stats + "/train/statistics.json");
    std::optional<DatasetStatistics> eval, previous;
    std::error_code ec;
    if (fs::exists(stats + "/eval/statistics.json", ec))
      eval = read_statistics_json(stats + "/eval/statistics.json");
    if (auto it = run.inputs.find("previous_statistics"); it != run.inputs.end())
      previous = read_statistics_json(it->second.uri + "/train/statistics.json");
    Schema schema = read_schema(run.inputs.at("schema").uri + "/schema.toml");
    std::vector<Anomaly> anomalies = validate_statistics(schema, train, eval ? &*eval : nullptr,
                                                         previous ? &*previous : nullptr);
    write_anomalies(anomalies, run.dir);
    // The statistics page again, the anomalies listed first and marked in their rows.
    SplitStatistics views = {{"train", &train}};
    if (eval) views.emplace_back("eval", &*eval);
    write_statistics_report(views, run.dir + "/report.html", anomalies);
    int64_t errors = 0;
    for (const Anomaly& a : anomalies) errors += a.severity == "error";
    Artifact a;
    a.type = "ExampleAnomalies";
    a.uri = run.dir;
    a.properties = {{"errors", std::to_string(errors)},
                    {"warnings", std::to_string(static_cast<int64_t>(anomalies.size()) - errors)},
                    {"report", run.dir + "/anomalies.md"},
                    {"page", run.dir + "/report.html"},
                    {"drift_checked", previous ? "1" : "0"}};
    ComponentOutput out;
    out.outputs.push_back({"anomalies", a});
    out.summary = summarize({{"anomalies", a}});
    return out;
  }
  std::string summarize(const Artifacts& outputs) const override {
    const Artifact& a = outputs.at("anomalies");
    const std::string e = a.property("errors"), w = a.property("warnings");
    if (e == "0" && w == "0") return "no anomalies";
    return str_cat(e, " error", e == "1" ? "" : "s", ", ", w, " warning", w == "1" ? "" : "s", ": ",
                   a.property("report"));
  }
  std::vector<std::string> stop_reasons(const Artifacts& outputs) const override {
    const Artifact& a = outputs.at("anomalies");
    if (a.property("errors", "0") == "0") return {};
    std::vector<std::string> lines;
    for (const Anomaly& x : read_anomalies_json(a.uri + "/anomalies.json")) {
      if (x.severity == "error") lines.push_back(anomaly_line(x));
    }
    return lines;
  }
};

}  // namespace

std::unique_ptr<Component> make_ingest_component() {
  return std::make_unique<IngestComponent>();
}
std::unique_ptr<Component> make_statistics_component() {
  return std::make_unique<StatisticsComponent>();
}
std::unique_ptr<Component> make_schema_component() {
  return std::make_unique<SchemaComponent>();
}
std::unique_ptr<Component> make_validate_component() {
  return std::make_unique<ValidateComponent>();
}

}  // namespace tern::pipeline
