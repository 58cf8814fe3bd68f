// SchemaGen: what the data should look like, inferred from the training split's statistics and
// kept as a readable, commented TOML file (schema.toml) the user may edit and pin
// (docs/pipeline.md "Schema"):
//
//   Schema s = infer_schema(read_statistics_json("train/statistics.json"));
//   io::write_file_atomically("schema.toml", schema_to_toml(s));
//   Schema pinned = read_schema("schema.toml");  // checked keys: file:line: unknown key ...
//
// Inference (SchemaOptions), TensorFlow Data Validation's rules where it has them: the type as
// observed; presence: required (min_fraction 1.0) when every training example holds the feature,
// else optional (min_fraction 0), and min_count 1 either way (the feature may not vanish); values
// per example: [min, max] observed; numeric range: [min, max] observed, with range_margin 0.5:
// values past the range by at most half its width are a warning (a random split puts the
// extremes of the data into eval alone), further ones an error; a bytes feature with at most
// max_domain_size distinct values gets them as its domain (larger ones are free text: no
// domain), with domain_min_fraction 0.9: up to 10% of a split's values may be new categories (a
// warning: the rare categories of a random split land in eval alone) before it is an
// error; image features their shape (when all share one) and formats; skew and drift
// comparators: infinity_norm (L-infinity distance of the normalized value counts) for bytes
// features with a domain, jensen_shannon_divergence (log base 2, in [0, 1]) of the histograms for
// numeric ones, both at `threshold` (0.1). The validator never flags a distance that sampling
// alone explains for splits of the sizes compared (validate.h).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tern/pipeline/statistics.h"

namespace tern::pipeline {

// The anomaly kinds validate_statistics reports (validate.h) and their default severities:
// missing_feature, presence, new_feature (warning), type_change, out_of_domain, out_of_range,
// value_count, image_shape, image_format, invalid_image, skew, drift. "error" stops the
// pipeline, "warning" does not.
const std::map<std::string, std::string>& default_severities();

struct Comparator {
  std::string metric;  // "infinity_norm" | "jensen_shannon_divergence"; "" = no check
  double threshold = 0;
  bool operator==(const Comparator&) const = default;
};

struct FeatureSchema {
  std::string name;
  FeatureType type = FeatureType::kFloat;
  double min_fraction = 0;                        // of the examples that must hold the feature
  int64_t min_count = 0;                          // examples that must hold it
  std::optional<int64_t> min_values, max_values;  // values per example
  std::optional<double> min, max;                 // numeric range
  double range_margin = 0;           // values past the range by <= this x (max - min): a warning
  std::vector<std::string> domain;   // bytes: the allowed values (empty: free text)
  double domain_min_fraction = 1.0;  // share of values that must be in the domain
  std::optional<ImageShapeCount> image_shape;  // count unused
  std::vector<std::string> image_formats;
  Comparator skew, drift;
  std::map<std::string, std::string> severity;  // anomaly kind -> "error" | "warning"
  bool operator==(const FeatureSchema&) const = default;
};

struct Schema {
  std::vector<FeatureSchema> features;          // sorted by name
  std::map<std::string, std::string> severity;  // every kind (defaults filled in)

  const FeatureSchema* find(std::string_view name) const;
  // "error" or "warning" for `kind` on `feature`: the feature's own setting, else the schema's.
  std::string severity_of(const std::string& feature, const std::string& kind) const;
  bool operator==(const Schema&) const = default;
};

struct SchemaOptions {
  // Present in at least this share of training examples: required, with min_fraction the share
  // rounded down to 0.01.
  double required_fraction = 1.0;
  int64_t max_domain_size = 100;
  double domain_min_fraction = 0.9;
  double range_margin = 0.5;
  double threshold = 0.1;  // skew and drift, both metrics
};

Schema infer_schema(const DatasetStatistics& train, const SchemaOptions& options = {});

// Commented TOML; read_schema(schema_to_toml(s)) == s.
std::string schema_to_toml(const Schema& schema);
// Every key checked: an unknown key, a wrong type or a value out of range is an InvalidArgument
// "<name>:<line>: ..." naming the key (did-you-mean for misspellings).
Schema parse_schema(std::string_view text, const std::string& name);
Schema read_schema(const std::string& path);

}  // namespace tern::pipeline
