// infer_schema and schema_to_toml (schema.h); reading the file back is schema_read.cc.
#include "tern/pipeline/schema.h"

#include <toml++/toml.h>
#include <algorithm>
#include <charconv>
#include <cmath>
#include <sstream>

#include "tern/base/error.h"
#include "tern/pipeline/schema_internal.h"

namespace tern::pipeline {

const std::map<std::string, std::string>& default_severities() {
  static const std::map<std::string, std::string> kDefaults = {
      {"missing_feature", "error"}, {"presence", "error"},      {"new_feature", "warning"},
      {"type_change", "error"},     {"out_of_domain", "error"}, {"out_of_range", "error"},
      {"value_count", "error"},     {"image_shape", "error"},   {"image_format", "error"},
      {"invalid_image", "error"},   {"skew", "error"},          {"drift", "error"}};
  return kDefaults;
}

const FeatureSchema* Schema::find(std::string_view name) const {
  auto it = std::lower_bound(features.begin(), features.end(), name,
                             [](const FeatureSchema& f, std::string_view n) { return f.name < n; });
  return it != features.end() && it->name == name ? &*it : nullptr;
}

std::string Schema::severity_of(const std::string& feature, const std::string& kind) const {
  if (const FeatureSchema* f = find(feature)) {
    auto it = f->severity.find(kind);
    if (it != f->severity.end()) return it->second;
  }
  auto it = severity.find(kind);
  if (it != severity.end()) return it->second;
  auto d = default_severities().find(kind);
  return d != default_severities().end() ? d->second : "error";
}

Schema infer_schema(const DatasetStatistics& train, const SchemaOptions& o) {
  TERN_CHECK_ARG(o.required_fraction >= 0 && o.required_fraction <= 1,
                 "schema: required_fraction must be in [0, 1]");
  TERN_CHECK_ARG(o.threshold >= 0 && o.threshold <= 1, "schema: threshold must be in [0, 1]");
  TERN_CHECK_ARG(o.domain_min_fraction >= 0 && o.domain_min_fraction <= 1,
                 "schema: domain_min_fraction must be in [0, 1]");
  TERN_CHECK_ARG(o.range_margin >= 0 && std::isfinite(o.range_margin),
                 "schema: range_margin must be >= 0");
  Schema s;
  s.severity = default_severities();
  for (const FeatureStatistics& f : train.features) {
    FeatureSchema fs;
    fs.name = f.name;
    fs.type = f.type;
    const double fraction =
        train.examples > 0 ? static_cast<double>(f.count) / static_cast<double>(train.examples) : 0;
    if (fraction >= o.required_fraction)
      fs.min_fraction = fraction >= 1 ? 1.0 : std::floor(fraction * 100) / 100;
    fs.min_count = f.count > 0 ? 1 : 0;
    if (f.count > 0) {
      fs.min_values = f.min_values;
      fs.max_values = f.max_values;
    }
    const bool numeric = f.type == FeatureType::kInt || f.type == FeatureType::kFloat;
    if (numeric && f.numeric && f.numeric->finite > 0) {
      fs.min = f.numeric->min;
      fs.max = f.numeric->max;
      fs.range_margin = o.range_margin;
      fs.skew = fs.drift = {"jensen_shannon_divergence", o.threshold};
    }
    if (f.type == FeatureType::kBytes && f.bytes && f.bytes->value_counts_complete &&
        f.bytes->unique <= o.max_domain_size) {
      for (const auto& [v, n] : f.bytes->value_counts) fs.domain.push_back(v);
      fs.domain_min_fraction = o.domain_min_fraction;
      fs.skew = fs.drift = {"infinity_norm", o.threshold};
    }
    if (f.type == FeatureType::kImage && f.image) {
      if (f.image->shapes.size() == 1) fs.image_shape = f.image->shapes[0];
      if (fs.image_shape) fs.image_shape->count = 0;
      for (const auto& [format, n] : f.image->formats) fs.image_formats.push_back(format);
    }
    s.features.push_back(std::move(fs));
  }
  return s;
}

namespace schema_internal {

// toml++'s own string formatter (quotes, backslash, \b \t \n \f \r and \uXXXX for the other
// control characters), as tern/config's render_config writes keys.
std::string toml_string(std::string_view s) {
  std::ostringstream os;
  // Always a basic string ("..."): the formatter would pick '...' where it can.
  os << toml::toml_formatter{
      toml::value<std::string>(std::string(s)),
      toml::toml_formatter::default_flags & ~toml::format_flags::allow_literal_strings};
  return os.str();
}

std::string toml_number(double v, bool integer) {
  if (integer && v == std::floor(v) && std::fabs(v) < 9e15)
    return std::to_string(static_cast<int64_t>(v));
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), v);
  std::string s(buf, end);
  if (s.find_first_of(".eEn") == std::string::npos) s += ".0";  // a TOML float, not an integer
  return s;
}

}  // namespace schema_internal

namespace {

using schema_internal::toml_number;
using schema_internal::toml_string;

std::string string_array(const std::vector<std::string>& values) {
  std::string out = "[";
  size_t line = 0;
  for (size_t i = 0; i < values.size(); ++i) {
    std::string v = toml_string(values[i]);
    if (i > 0) {
      out += ",";
      if (line + v.size() > 90) {
        out += "\n  ";
        line = 2;
      } else {
        out += " ";
      }
    }
    line += v.size() + 2;
    out += v;
  }
  return out + "]";
}

std::string comparator(const Comparator& c) {
  return str_cat("{ ", c.metric, " = ", toml_number(c.threshold, false), " }");
}

}  // namespace

std::string schema_to_toml(const Schema& schema) {
  std::ostringstream os;
  os << R"(# The schema of the training data: inferred by tern from the training split's statistics
# (docs/pipeline.md "Schema"). Edit it to accept more (widen a range, add domain values, lower a
# severity) and pin it in the pipeline file (schema = "path/schema.toml"). Unknown keys are errors.
#
# Per [[feature]]:
#   type                 int | float | bytes | image; another type in the data: type_change
#   min_fraction         share of examples that must hold the feature (presence; 0: optional)
#   min_count            examples that must hold it (1: the feature may not disappear)
#   values               [min, max] values per example (value_count)
#   range                [min, max] of a numeric feature, as observed in training (out_of_range)
#   range_margin         values past the range by at most this share of its width are a warning
#   domain               the values of a categorical (bytes) feature (out_of_domain)
#   domain_min_fraction  share of a split's values that must be in the domain; new values are a
#                        warning until then (1.0: any new value has the kind's severity)
#   shape, formats       of an image feature: [height, width, channels] and image/format values
#   skew, drift          train vs eval (skew) and vs the previous run's training data (drift):
#                        { infinity_norm = t } for categorical features (L-infinity distance of
#                        the normalized value counts), { jensen_shannon_divergence = t } for
#                        numeric ones (over the two histograms put in the same bins, log base 2)
#   severity             { kind = "error" | "warning" }: overrides [severity] for this feature
version = 1

# Severity of each anomaly kind: "error" stops the pipeline before training, "warning" does not.
[severity]
)";
  for (const auto& [kind, sev] : schema.severity) os << kind << " = " << toml_string(sev) << "\n";
  for (const FeatureSchema& f : schema.features) {
    const bool integer = f.type == FeatureType::kInt;
    os << "\n[[feature]]\nname = " << toml_string(f.name) << "\n";
    os << "type = " << toml_string(feature_type_name(f.type)) << "\n";
    os << "min_fraction = " << toml_number(f.min_fraction, false) << "\n";
    os << "min_count = " << f.min_count << "\n";
    if (f.min_values && f.max_values)
      os << "values = [" << *f.min_values << ", " << *f.max_values << "]\n";
    if (f.min && f.max)
      os << "range = [" << toml_number(*f.min, integer) << ", " << toml_number(*f.max, integer)
         << "]\n";
    if ((f.min && f.max) || f.range_margin != 0)
      os << "range_margin = " << toml_number(f.range_margin, false) << "\n";
    if (!f.domain.empty()) os << "domain = " << string_array(f.domain) << "\n";
    if (!f.domain.empty() || f.domain_min_fraction != 1)
      os << "domain_min_fraction = " << toml_number(f.domain_min_fraction, false) << "\n";
    if (f.image_shape)
      os << "shape = [" << f.image_shape->height << ", " << f.image_shape->width << ", "
         << f.image_shape->channels << "]\n";
    if (!f.image_formats.empty()) os << "formats = " << string_array(f.image_formats) << "\n";
    if (!f.skew.metric.empty()) os << "skew = " << comparator(f.skew) << "\n";
    if (!f.drift.metric.empty()) os << "drift = " << comparator(f.drift) << "\n";
    if (!f.severity.empty()) {
      os << "severity = {";
      bool first = true;
      for (const auto& [kind, sev] : f.severity) {
        os << (first ? " " : ", ") << kind << " = " << toml_string(sev);
        first = false;
      }
      os << " }\n";
    }
  }
  return os.str();
}

}  // namespace tern::pipeline
