// analysis.json: writing, and reading back with every field checked against the spec.
#include <nlohmann/json.hpp>

#include <cmath>
#include <set>

#include "tern/base/error.h"
#include "tern/transform/analysis.h"

namespace tern::transform {
namespace {

using json = nlohmann::json;

constexpr const char* kFormat = "tern.transform_analysis";

json counts_json(const std::vector<std::pair<std::string, int64_t>>& v) {
  json out = json::array();
  for (const auto& [value, n] : v) out.push_back({{"value", value}, {"count", n}});
  return out;
}

// A reader that names the file and the key path in every error.
struct Reader {
  const std::string& file;

  [[noreturn]] void fail(const std::string& key, const std::string& msg) const {
    throw_error(ErrorCode::kInvalidArgument, file, ": key '", key, "' ", msg);
  }
  const json& field(const json& obj, const std::string& path, const char* key) const {
    const std::string k = path.empty() ? key : path + "." + key;
    if (!obj.is_object() || !obj.contains(key)) fail(k, "is missing");
    return obj[key];
  }
  int64_t count(const json& obj, const std::string& path, const char* key) const {
    const json& v = field(obj, path, key);
    if (!v.is_number_integer() || v.get<int64_t>() < 0)
      fail(path.empty() ? key : path + "." + key, "must be an integer >= 0");
    return v.get<int64_t>();
  }
  double number(const json& obj, const std::string& path, const char* key) const {
    const json& v = field(obj, path, key);
    if (!v.is_number() || !std::isfinite(v.get<double>()))
      fail(path.empty() ? key : path + "." + key, "must be a finite number");
    return v.get<double>();
  }
  std::string string(const json& obj, const std::string& path, const char* key) const {
    const json& v = field(obj, path, key);
    if (!v.is_string()) fail(path.empty() ? key : path + "." + key, "must be a string");
    return v.get<std::string>();
  }
  std::vector<std::pair<std::string, int64_t>> counts(const json& obj, const std::string& path,
                                                      const char* key) const {
    const std::string k = path.empty() ? key : path + "." + key;
    const json& v = field(obj, path, key);
    if (!v.is_array()) fail(k, "must be an array of {\"value\", \"count\"}");
    std::vector<std::pair<std::string, int64_t>> out;
    std::set<std::string> seen;
    for (size_t i = 0; i < v.size(); ++i) {
      const std::string e = str_cat(k, "[", i, "]");
      std::string value = string(v[i], e, "value");
      if (!seen.insert(value).second) fail(e, str_cat("repeats value '", value, "'"));
      out.emplace_back(std::move(value), count(v[i], e, "count"));
    }
    return out;
  }
};

}  // namespace

std::string analysis_to_json(const TransformAnalysis& a) {
  json features = json::array();
  for (const FeatureAnalysis& f : a.features) {
    json j = {{"name", f.name},
              {"op", std::string(transform_op_name(f.op))},
              {"present", f.present},
              {"missing", f.missing}};
    if (f.op == TransformOp::kZScore || f.op == TransformOp::kScaleTo01 ||
        f.op == TransformOp::kIdentity || f.op == TransformOp::kBucketize) {
      j["count"] = f.count;
      j["mean"] = f.mean;
      j["std"] = f.std;
      j["min"] = f.min;
      j["max"] = f.max;
    }
    if (f.op == TransformOp::kBucketize) {
      j["boundaries"] = f.boundaries;
      j["quantile_rank_error"] = f.quantile_rank_error;
    }
    if (f.op == TransformOp::kVocabulary) {
      j["unique"] = f.unique;
      j["vocabulary"] = counts_json(f.vocabulary);
    }
    features.push_back(j);
  }
  json root = {{"format", kFormat},
               {"format_version", kAnalysisFormatVersion},
               {"records", a.records},
               {"bytes", a.bytes},
               {"files", a.files},
               {"features", features}};
  if (!a.label.feature.empty()) {
    json l = {{"feature", a.label.feature},
              {"kind", a.label.bytes ? "bytes" : "int64"},
              {"num_classes", a.label.num_classes}};
    if (a.label.bytes) {
      l["vocabulary"] = counts_json(a.label.vocabulary);
    } else {
      l["min"] = a.label.min;
      l["max"] = a.label.max;
    }
    root["label"] = l;
  }
  return root.dump(2) + "\n";
}

TransformAnalysis parse_analysis_json(std::string_view text, const TransformSpec& spec,
                                      const std::string& file) {
  json root = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded())
    throw_error(ErrorCode::kInvalidArgument, file, ": not valid JSON");
  Reader r{file};
  if (!root.is_object()) throw_error(ErrorCode::kInvalidArgument, file, ": not a JSON object");
  if (r.string(root, "", "format") != kFormat)
    r.fail("format", str_cat("must be \"", kFormat, "\""));
  if (const json& fv = r.field(root, "", "format_version"); !fv.is_number_integer() ||
      fv.get<int64_t>() != kAnalysisFormatVersion)
    r.fail("format_version", str_cat("must be ", kAnalysisFormatVersion, " (written by another "
                                     "tern version: analyze again)"));
  TransformAnalysis a;
  a.records = r.count(root, "", "records");
  a.bytes = r.count(root, "", "bytes");
  const json& files = r.field(root, "", "files");
  if (!files.is_array()) r.fail("files", "must be an array of strings");
  for (size_t i = 0; i < files.size(); ++i) {
    if (!files[i].is_string()) r.fail(str_cat("files[", i, "]"), "must be a string");
    a.files.push_back(files[i].get<std::string>());
  }
  const json& features = r.field(root, "", "features");
  if (!features.is_array() || features.size() != spec.features.size())
    r.fail("features", str_cat("must be an array of ", spec.features.size(),
                               " entries, one per spec feature"));
  for (size_t k = 0; k < spec.features.size(); ++k) {
    const FeatureTransform& f = spec.features[k];
    const std::string p = str_cat("features[", k, "]");
    const json& j = features[k];
    FeatureAnalysis fa;
    fa.name = r.string(j, p, "name");
    if (fa.name != f.name)
      r.fail(p + ".name", str_cat("is '", fa.name, "' but the spec's feature ", k, " is '", f.name,
                                  "' (analysis.json belongs to another spec)"));
    const std::string op = r.string(j, p, "op");
    if (op != transform_op_name(f.op))
      r.fail(p + ".op", str_cat("is '", op, "' but the spec says '", transform_op_name(f.op), "'"));
    fa.op = f.op;
    fa.present = r.count(j, p, "present");
    fa.missing = r.count(j, p, "missing");
    if (f.kind != RawKind::kCategorical) {
      fa.count = r.count(j, p, "count");
      fa.mean = r.number(j, p, "mean");
      fa.std = r.number(j, p, "std");
      fa.min = r.number(j, p, "min");
      fa.max = r.number(j, p, "max");
      if (fa.std < 0) r.fail(p + ".std", "must be >= 0");
      if (fa.count > 0 && !(fa.min <= fa.mean && fa.mean <= fa.max))
        r.fail(p + ".mean", "must lie within [min, max]");
    }
    if (f.op == TransformOp::kBucketize) {
      const json& b = r.field(j, p, "boundaries");
      if (!b.is_array()) r.fail(p + ".boundaries", "must be an array of numbers");
      for (size_t i = 0; i < b.size(); ++i) {
        if (!b[i].is_number() || !std::isfinite(b[i].get<double>()))
          r.fail(str_cat(p, ".boundaries[", i, "]"), "must be a finite number");
        fa.boundaries.push_back(b[i].get<double>());
        if (i > 0 && !(fa.boundaries[i - 1] < fa.boundaries[i]))
          r.fail(str_cat(p, ".boundaries[", i, "]"), "must be greater than the one before");
      }
      if (static_cast<int64_t>(fa.boundaries.size()) >= f.num_buckets)
        r.fail(p + ".boundaries", str_cat("holds ", fa.boundaries.size(), " boundaries for ",
                                          f.num_buckets, " buckets"));
      fa.quantile_rank_error = r.number(j, p, "quantile_rank_error");
    }
    if (f.op == TransformOp::kVocabulary) {
      fa.unique = r.count(j, p, "unique");
      fa.vocabulary = r.counts(j, p, "vocabulary");
      if (f.top_k > 0 && static_cast<int64_t>(fa.vocabulary.size()) > f.top_k)
        r.fail(p + ".vocabulary", str_cat("holds ", fa.vocabulary.size(), " values; top_k is ",
                                          f.top_k));
    }
    a.features.push_back(std::move(fa));
  }
  const bool has_label = root.contains("label");
  if (has_label != !spec.label.empty())
    r.fail("label", spec.label.empty() ? "is present but the spec has no label"
                                       : str_cat("is missing (the spec's label is '", spec.label,
                                                 "')"));
  if (has_label) {
    const json& l = root["label"];
    LabelAnalysis& la = a.label;
    la.feature = r.string(l, "label", "feature");
    if (la.feature != spec.label)
      r.fail("label.feature", str_cat("is '", la.feature, "' but the spec's label is '",
                                      spec.label, "'"));
    const std::string kind = r.string(l, "label", "kind");
    if (kind != "bytes" && kind != "int64") r.fail("label.kind", "must be \"bytes\" or \"int64\"");
    la.bytes = kind == "bytes";
    la.num_classes = r.count(l, "label", "num_classes");
    if (la.bytes) {
      la.vocabulary = r.counts(l, "label", "vocabulary");
      if (static_cast<int64_t>(la.vocabulary.size()) != la.num_classes)
        r.fail("label.num_classes", "must equal the vocabulary's size");
      for (const auto& [v, n] : la.vocabulary) {
        if (v.find('\n') != std::string::npos)
          r.fail("label.vocabulary", "holds a value with a newline (class names are lines)");
      }
    } else {
      la.min = r.count(l, "label", "min");
      la.max = r.count(l, "label", "max");
      if (la.min > la.max || la.num_classes != la.max + 1)
        r.fail("label.num_classes", "must be max + 1 with min <= max");
    }
    if (la.num_classes < 1 || la.num_classes > (int64_t{1} << 24))
      r.fail("label.num_classes", "must be 1 .. 2^24");
  }
  return a;
}

}  // namespace tern::transform
