// parse_schema / read_schema: schema.toml read table by table with tern/config's Section (checked
// keys and types, file:line, did-you-mean), then the values' own rules (schema.h).
#include <toml++/toml.h>
#include <algorithm>
#include <cmath>
#include <set>

#include "tern/config/config_section.h"
#include "tern/config/toml_text.h"
#include "tern/io/atomic_file.h"
#include "tern/pipeline/schema.h"

namespace tern::pipeline {

namespace {

using config::Section;

constexpr uint64_t kMaxSchemaBytes = uint64_t{16} << 20;

std::map<std::string, std::string> read_severities(Section s) {
  std::map<std::string, std::string> out;
  for (const auto& [kind, sev] : default_severities()) {
    std::optional<std::string> v;
    s.read_optional(kind, v);
    if (!v) continue;
    if (*v != "error" && *v != "warning")
      s.error(kind,
              str_cat("'", s.full(kind), "' must be \"error\" or \"warning\", got \"", *v, "\""));
    out[kind] = *v;
  }
  s.finish();
  return out;
}

Comparator read_comparator(Section s) {
  Comparator c;
  int given = 0;
  for (const char* metric : {"infinity_norm", "jensen_shannon_divergence"}) {
    std::optional<double> t;
    s.read_optional(metric, t);
    if (!t) continue;
    ++given;
    if (!(*t >= 0 && *t <= 1)) s.error(metric, str_cat("'", s.full(metric), "' must be in [0, 1]"));
    c = {metric, *t};
  }
  s.finish();
  if (s.present() && given != 1)
    s.error("", str_cat("'", s.path(),
                        "' takes one of infinity_norm = t or jensen_shannon_divergence = t"));
  return c;
}

FeatureSchema read_feature(Section& f) {
  FeatureSchema out;
  if (!f.has("name")) f.error("name", str_cat("'", f.path(), "' has no name"));
  f.read("name", out.name);
  std::string type;
  if (!f.has("type")) f.error("type", str_cat("feature '", out.name, "' has no type"));
  f.read("type", type);
  const std::optional<FeatureType> t = parse_feature_type(type);
  if (!t)
    f.error("type", str_cat("'", f.full("type"), "' = \"", type,
                            "\": a type is int, float, bytes or image"));
  out.type = *t;
  f.read("min_fraction", out.min_fraction);
  if (!(out.min_fraction >= 0 && out.min_fraction <= 1))
    f.error("min_fraction", str_cat("'", f.full("min_fraction"), "' must be in [0, 1]"));
  f.read("min_count", out.min_count);
  if (out.min_count < 0) f.error("min_count", str_cat("'", f.full("min_count"), "' must be >= 0"));
  std::vector<int64_t> values;
  f.read("values", values);
  if (f.has("values")) {
    if (values.size() != 2 || values[0] < 0 || values[0] > values[1])
      f.error("values",
              str_cat("'", f.full("values"), "' must be [min, max] with 0 <= min <= max"));
    out.min_values = values[0];
    out.max_values = values[1];
  }
  std::vector<double> range;
  f.read_numbers("range", range);
  if (f.has("range")) {
    if (range.size() != 2 || !std::isfinite(range[0]) || !std::isfinite(range[1]) ||
        range[0] > range[1])
      f.error("range", str_cat("'", f.full("range"), "' must be [min, max] with min <= max"));
    out.min = range[0];
    out.max = range[1];
  }
  f.read("range_margin", out.range_margin);
  if (!(out.range_margin >= 0 && std::isfinite(out.range_margin)))
    f.error("range_margin", str_cat("'", f.full("range_margin"), "' must be >= 0"));
  f.read("domain", out.domain);
  std::set<std::string> seen;
  for (const std::string& v : out.domain)
    if (!seen.insert(v).second)
      f.error("domain", str_cat("'", f.full("domain"), "' lists \"", v, "\" twice"));
  f.read("domain_min_fraction", out.domain_min_fraction);
  if (!(out.domain_min_fraction >= 0 && out.domain_min_fraction <= 1))
    f.error("domain_min_fraction",
            str_cat("'", f.full("domain_min_fraction"), "' must be in [0, 1]"));
  std::vector<int64_t> shape;
  f.read("shape", shape);
  if (f.has("shape")) {
    if (shape.size() != 3 || shape[0] <= 0 || shape[1] <= 0 || shape[2] <= 0)
      f.error("shape", str_cat("'", f.full("shape"), "' must be [height, width, channels] > 0"));
    out.image_shape = ImageShapeCount{shape[0], shape[1], shape[2], 0};
  }
  f.read("formats", out.image_formats);
  out.skew = read_comparator(f.sub("skew"));
  out.drift = read_comparator(f.sub("drift"));
  out.severity = read_severities(f.sub("severity"));
  f.finish();
  return out;
}

}  // namespace

Schema parse_schema(std::string_view text, const std::string& name) {
  toml::table root;
  try {
    root = config::parse_toml(text, name);
  } catch (const toml::parse_error& e) {
    throw config::ConfigError(
        ErrorCode::kInvalidArgument,
        str_cat(name, ":", e.source().begin.line, ":", e.source().begin.column,
                ": TOML syntax error: ", e.description()));
  }
  Section top(&root, "", name);
  int64_t version = 0;
  if (!top.has("version")) top.error("version", str_cat(name, ": no 'version' (1)"));
  top.read("version", version);
  if (version != 1) top.error("version", str_cat("'version' = ", version, ": this tern reads 1"));
  Schema s;
  s.severity = default_severities();
  for (const auto& [kind, sev] : read_severities(top.sub("severity"))) s.severity[kind] = sev;
  std::set<std::string> names;
  for (Section& f : top.tables("feature")) {
    FeatureSchema fs = read_feature(f);
    if (!names.insert(fs.name).second)
      f.error("name", str_cat("feature '", fs.name, "' is described twice"));
    s.features.push_back(std::move(fs));
  }
  top.finish();
  std::sort(s.features.begin(), s.features.end(),
            [](const FeatureSchema& a, const FeatureSchema& b) { return a.name < b.name; });
  return s;
}

Schema read_schema(const std::string& path) {
  return parse_schema(io::read_file(path, kMaxSchemaBytes), path);
}

}  // namespace tern::pipeline
