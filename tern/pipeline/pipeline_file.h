// The pipeline file (TOML, docs/pipeline.md "The pipeline file"): which components run (the
// sections present) and their settings, read with checked keys like a training config: an unknown
// key, a wrong type, a value out of range or a file that does not exist is a config::ConfigError
// naming the file, the line and the key (with the closest valid key). `[transform]` is read by
// tern/transform's parser.
//
//   [pipeline]
//   name = "autos"
//   [ingest]
//   format = "csv"
//   paths = ["/usr/lib/python3/dist-packages/statsmodels/gam/tests/results/autos.csv"]
//   [statistics]
//   [schema]
//   [validate]
//   [transform]
//   ...
//   [train]
//   config = "autos_model.toml"
//   [evaluate]
//   thresholds = { accuracy = 0.7 }
//   [push]
//
// Components run in the order ingest -> statistics -> schema -> validate -> transform -> train ->
// evaluate -> push; a component needs the sections of the components it reads from.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tern::pipeline {

// The components, in dependency order.
inline const std::vector<std::string>& component_names() {
  static const std::vector<std::string> kNames = {"ingest",    "statistics", "schema",   "validate",
                                                  "transform", "train",      "evaluate", "push"};
  return kNames;
}

// [ingest] (ingest.h's IngestOptions; paths resolved against the pipeline file).
struct IngestSettings {
  std::string format;              // csv | tfrecord | idx | image_folder; "" = from the input
  std::vector<std::string> paths;  // inputs, split by hash into `ratios`
  std::string labels;              // idx: the labels of a single images file
  std::map<std::string, std::string> column_types;  // csv: name -> "categorical" | "numeric"
  std::vector<std::pair<std::string, double>> ratios = {{"train", 0.8}, {"eval", 0.2}};
  std::string split_key;  // a feature; "" = the serialized record
  // Inputs straight to splits (no hash), e.g. IDX train and t10k files: split -> files.
  std::map<std::string, std::vector<std::string>> split_files;
  int shards = 1;
  std::string delimiter = ",";  // csv
};

// [statistics] (statistics.h's StatisticsOptions).
struct StatisticsSettings {
  int64_t top_k = 20;
  int64_t histogram_bins = 20;
  std::vector<double> quantiles = {0, 0.01, 0.05, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99, 1};
  int64_t max_value_counts = 10000;
};

// [schema]: inferred from the training statistics (schema.h's SchemaOptions), or a pinned file.
struct SchemaSettings {
  std::string path;  // "" = infer
  double required_fraction = 0.99;
  int64_t max_domain_size = 100;
  double threshold = 0.1;  // skew and drift comparators
};

// [validate]
struct ValidateSettings {
  bool compare_previous = true;  // drift against the previous run's training statistics
};

// [transform]: the section's TOML text and where it starts; tern/transform parses it.
struct TransformSettings {
  std::string canonical_json;  // the table as canonical JSON (the cache key's settings)
};

// [train]
struct TrainSettings {
  std::string config;  // a tern training config: its model / loss / optimizer / schedule /
                       // training sections are used, [data] is generated
  std::optional<int64_t> epochs, batch_size, steps_per_epoch, seed;
  std::optional<double> learning_rate;
  std::vector<std::string> overrides;  // `set = ["key=value", ...]` (tern train --set)
};

// [evaluate]
struct EvaluateSettings {
  std::vector<std::string> metrics = {"accuracy", "loss"};
  std::vector<std::string> slice_by;         // raw features ("label" = per class)
  std::map<std::string, double> thresholds;  // accuracy (at least), loss (at most)
  double max_regression = 0.01;  // accuracy may drop at most this much against the served model
  int64_t batch_size = 256;
};

// [push]
struct PushSettings {
  bool enabled = true;
};

struct PipelineSpec {
  std::string path;  // the pipeline file (as given)
  std::string text;  // its contents
  std::string name;
  std::string root;               // [pipeline] root or --out, else runs/pipelines/NAME
  std::string serving_base_path;  // default ROOT/serving/MODEL_NAME
  std::string model_name;         // default = name
  std::optional<IngestSettings> ingest;
  std::optional<StatisticsSettings> statistics;
  std::optional<SchemaSettings> schema;
  std::optional<ValidateSettings> validate;
  std::optional<TransformSettings> transform;
  std::optional<TrainSettings> train;
  std::optional<EvaluateSettings> evaluate;
  std::optional<PushSettings> push;

  bool has(const std::string& component) const;
  // The components whose sections are present, in dependency order.
  std::vector<std::string> components() const;
  // The resolved settings of a component as canonical JSON (sorted keys; the cache key's part).
  std::string settings_json(const std::string& component) const;
};

// [train]'s keys as `tern train --set` overrides (training.epochs=3, ...; then `set`).
std::vector<std::string> training_overrides(const TrainSettings& settings);

// Reads `path` (at most 16 MiB). `out_dir` (tern pipeline run --out) overrides [pipeline] root.
// Relative paths in the file are resolved against the file's folder. ConfigError (exit 2) for
// anything the file gets wrong; NotFound when it does not exist.
PipelineSpec load_pipeline(const std::string& path, const std::string& out_dir = "");

// The same from text (`file` names it in errors and anchors relative paths). With
// `check_files` false, paths are not checked for existence (the fuzz target).
PipelineSpec parse_pipeline(std::string_view text, const std::string& file,
                            const std::string& out_dir = "", bool check_files = true);

}  // namespace tern::pipeline
