// statistics.json: DatasetStatistics written with nlohmann-json in a fixed key order, and read
// back with every key and type checked (json_fields.h). Layout in docs/pipeline.md "Statistics".
#include <nlohmann/json.hpp>

#include "tern/io/atomic_file.h"
#include "tern/pipeline/json_fields.h"
#include "tern/pipeline/statistics.h"

namespace tern::pipeline {

using ojson = nlohmann::ordered_json;

namespace {

constexpr const char* kFormat = "tern.statistics";
constexpr int64_t kVersion = 1;
constexpr uint64_t kMaxFileBytes = uint64_t{1} << 30;

ojson numeric_json(const NumericStatistics& n) {
  ojson j;
  j["finite"] = n.finite;
  j["nan"] = n.nan;
  j["infinite"] = n.infinite;
  j["min"] = json_number(n.min);
  j["max"] = json_number(n.max);
  j["mean"] = json_number(n.mean);
  j["std"] = json_number(n.std_dev);
  j["zeros"] = n.zeros;
  j["quantiles_exact"] = n.quantiles_exact;
  ojson q = ojson::array();
  for (const auto& [p, v] : n.quantiles) q.push_back({json_number(p), json_number(v)});
  j["quantiles"] = std::move(q);
  ojson h = ojson::array();
  for (const HistogramBin& b : n.histogram)
    h.push_back({json_number(b.low), json_number(b.high), json_number(b.count)});
  j["histogram"] = std::move(h);
  ojson counts = ojson::array();
  for (const auto& [v, c] : n.value_counts) counts.push_back({json_number(v), c});
  j["value_counts"] = std::move(counts);
  return j;
}

ojson bytes_json(const BytesStatistics& b) {
  ojson j;
  j["unique"] = b.unique;
  j["unique_exact"] = b.unique_exact;
  j["avg_length"] = json_number(b.avg_length);
  j["min_length"] = b.min_length;
  j["max_length"] = b.max_length;
  ojson top = ojson::array();
  for (const auto& [v, n] : b.top_values) top.push_back({v, n});
  j["top_values"] = std::move(top);
  j["value_counts_complete"] = b.value_counts_complete;
  j["other_values"] = b.other_values;
  ojson counts = ojson::object();
  for (const auto& [v, n] : b.value_counts) counts[v] = n;
  j["value_counts"] = std::move(counts);
  return j;
}

ojson image_json(const ImageStatistics& s) {
  ojson j;
  ojson formats = ojson::object();
  for (const auto& [f, n] : s.formats) formats[f] = n;
  j["formats"] = std::move(formats);
  ojson shapes = ojson::array();
  for (const ImageShapeCount& c : s.shapes)
    shapes.push_back(
        {{"height", c.height}, {"width", c.width}, {"channels", c.channels}, {"count", c.count}});
  j["shapes"] = std::move(shapes);
  j["invalid"] = s.invalid;
  ojson means = ojson::array();
  for (double m : s.channel_means) means.push_back(json_number(m));
  j["channel_means"] = std::move(means);
  j["images_measured"] = s.images_measured;
  j["sampled"] = s.sampled;
  j["avg_bytes"] = json_number(s.avg_bytes);
  return j;
}

NumericStatistics read_numeric(const JsonField& j) {
  j.only({"finite", "nan", "infinite", "min", "max", "mean", "std", "zeros", "quantiles_exact",
          "quantiles", "histogram", "value_counts"});
  NumericStatistics n;
  n.finite = j["finite"].as_count();
  n.nan = j["nan"].as_count();
  n.infinite = j["infinite"].as_count();
  n.min = j["min"].as_double();
  n.max = j["max"].as_double();
  n.mean = j["mean"].as_double();
  n.std_dev = j["std"].as_double();
  n.zeros = j["zeros"].as_count();
  if (n.finite > 0 && !(n.min <= n.max)) j["max"].fail("min > max");
  n.quantiles_exact = j["quantiles_exact"].as_bool();
  const JsonField q = j["quantiles"];
  for (size_t i = 0; i < q.array_size(); ++i) {
    const JsonField e = q.at(i);
    if (e.array_size() != 2) e.fail("expected [q, value]");
    const double p = e.at(0).as_double();
    if (!(p >= 0 && p <= 1)) e.at(0).fail("quantile not in [0, 1]");
    n.quantiles.emplace_back(p, e.at(1).as_double());
  }
  const JsonField h = j["histogram"];
  for (size_t i = 0; i < h.array_size(); ++i) {
    const JsonField e = h.at(i);
    if (e.array_size() != 3) e.fail("expected [low, high, count]");
    HistogramBin b{e.at(0).as_double(), e.at(1).as_double(), e.at(2).as_double()};
    if (!(b.low <= b.high)) e.fail("low > high");
    if (!(b.count >= 0)) e.at(2).fail("negative count");
    n.histogram.push_back(b);
  }
  const JsonField counts = j["value_counts"];
  for (size_t i = 0; i < counts.array_size(); ++i) {
    const JsonField e = counts.at(i);
    if (e.array_size() != 2) e.fail("expected [value, count]");
    const double v = e.at(0).as_double();
    if (!n.value_counts.empty() && !(n.value_counts.back().first < v))
      e.at(0).fail("values must be ascending and distinct");
    n.value_counts.emplace_back(v, e.at(1).as_count());
  }
  return n;
}

BytesStatistics read_bytes(const JsonField& j) {
  j.only({"unique", "unique_exact", "avg_length", "min_length", "max_length", "top_values",
          "value_counts_complete", "other_values", "value_counts"});
  BytesStatistics b;
  b.unique = j["unique"].as_count();
  b.unique_exact = j["unique_exact"].as_bool();
  b.avg_length = j["avg_length"].as_double();
  b.min_length = j["min_length"].as_count();
  b.max_length = j["max_length"].as_count();
  const JsonField top = j["top_values"];
  for (size_t i = 0; i < top.array_size(); ++i) {
    const JsonField e = top.at(i);
    if (e.array_size() != 2) e.fail("expected [value, count]");
    b.top_values.emplace_back(e.at(0).as_string(), e.at(1).as_count());
  }
  b.value_counts_complete = j["value_counts_complete"].as_bool();
  b.other_values = j["other_values"].as_count();
  const JsonField counts = j["value_counts"];
  for (const auto& [k, v] : counts.object().items())
    b.value_counts[k] = counts.item(k, v).as_count();
  return b;
}

ImageStatistics read_image(const JsonField& j) {
  j.only(
      {"formats", "shapes", "invalid", "channel_means", "images_measured", "sampled", "avg_bytes"});
  ImageStatistics s;
  const JsonField formats = j["formats"];
  for (const auto& [k, v] : formats.object().items()) {
    s.formats[k] = formats.item(k, v).as_count();
  }
  const JsonField shapes = j["shapes"];
  for (size_t i = 0; i < shapes.array_size(); ++i) {
    const JsonField e = shapes.at(i);
    e.only({"height", "width", "channels", "count"});
    s.shapes.push_back({e["height"].as_count(), e["width"].as_count(), e["channels"].as_count(),
                        e["count"].as_count()});
  }
  s.invalid = j["invalid"].as_count();
  const JsonField means = j["channel_means"];
  for (size_t i = 0; i < means.array_size(); ++i)
    s.channel_means.push_back(means.at(i).as_double());
  s.images_measured = j["images_measured"].as_count();
  s.sampled = j["sampled"].as_bool();
  s.avg_bytes = j["avg_bytes"].as_double();
  return s;
}

}  // namespace

std::string statistics_to_json(const DatasetStatistics& stats) {
  ojson j;
  j["format"] = kFormat;
  j["version"] = kVersion;
  j["examples"] = stats.examples;
  j["bytes"] = stats.bytes;
  j["files"] = stats.files;
  ojson features = ojson::array();
  for (const FeatureStatistics& f : stats.features) {
    ojson fj;
    fj["name"] = f.name;
    fj["type"] = feature_type_name(f.type);
    fj["count"] = f.count;
    fj["missing"] = f.missing;
    fj["num_values"] = f.num_values;
    fj["min_values"] = f.min_values;
    fj["max_values"] = f.max_values;
    fj["avg_values"] = json_number(f.avg_values);
    ojson other = ojson::object();
    for (const auto& [t, n] : f.other_types) other[t] = n;
    fj["other_types"] = std::move(other);
    if (f.numeric) fj["numeric"] = numeric_json(*f.numeric);
    if (f.bytes) fj["bytes"] = bytes_json(*f.bytes);
    if (f.image) fj["image"] = image_json(*f.image);
    features.push_back(std::move(fj));
  }
  j["features"] = std::move(features);
  // Values from the data are valid UTF-8 already (value_text); replace guards the rest.
  return j.dump(1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

DatasetStatistics parse_statistics_json(std::string_view text, const std::string& name) {
  const nlohmann::json doc = parse_json_text(text, name);
  const JsonField root(doc, "", name);
  root.only({"format", "version", "examples", "bytes", "files", "features"});
  if (root["format"].as_string() != kFormat)
    root["format"].fail(str_cat("expected \"", kFormat, "\""));
  if (root["version"].as_int() != kVersion)
    root["version"].fail(str_cat("version ", root["version"].as_int(), " is not ", kVersion));
  DatasetStatistics s;
  s.examples = root["examples"].as_count();
  s.bytes = root["bytes"].as_count();
  const JsonField files = root["files"];
  for (size_t i = 0; i < files.array_size(); ++i) s.files.push_back(files.at(i).as_string());
  const JsonField features = root["features"];
  for (size_t i = 0; i < features.array_size(); ++i) {
    const JsonField fj = features.at(i);
    fj.only({"name", "type", "count", "missing", "num_values", "min_values", "max_values",
             "avg_values", "other_types", "numeric", "bytes", "image"});
    FeatureStatistics f;
    f.name = fj["name"].as_string();
    const std::string type = fj["type"].as_string();
    const std::optional<FeatureType> t = parse_feature_type(type);
    if (!t) fj["type"].fail(str_cat("'", type, "' is not int, float, bytes or image"));
    f.type = *t;
    f.count = fj["count"].as_count();
    f.missing = fj["missing"].as_count();
    if (f.count > s.examples || f.missing != s.examples - f.count)
      fj["missing"].fail(str_cat("count ", f.count, " + missing ", f.missing, " is not the ",
                                 s.examples, " examples"));
    f.num_values = fj["num_values"].as_count();
    f.min_values = fj["min_values"].as_count();
    f.max_values = fj["max_values"].as_count();
    if (f.min_values > f.max_values) fj["min_values"].fail("min_values > max_values");
    f.avg_values = fj["avg_values"].as_double();
    const JsonField other = fj["other_types"];
    for (const auto& [k, v] : other.object().items()) {
      if (!parse_feature_type(k)) other.fail(str_cat("'", k, "' is not a type"));
      f.other_types[k] = other.item(k, v).as_count();
    }
    if (fj.has("numeric")) f.numeric = read_numeric(fj["numeric"]);
    if (fj.has("bytes")) f.bytes = read_bytes(fj["bytes"]);
    if (fj.has("image")) f.image = read_image(fj["image"]);
    if ((f.type == FeatureType::kInt || f.type == FeatureType::kFloat) && !f.numeric)
      fj.fail(str_cat("a ", type, " feature without \"numeric\""));
    if (f.type == FeatureType::kBytes && !f.bytes) fj.fail("a bytes feature without \"bytes\"");
    if (f.type == FeatureType::kImage && !f.image) fj.fail("an image feature without \"image\"");
    if (!s.features.empty() && !(s.features.back().name < f.name))
      fj["name"].fail(str_cat("'", f.name, "' out of order or repeated (names are sorted)"));
    s.features.push_back(std::move(f));
  }
  return s;
}

DatasetStatistics read_statistics_json(const std::string& path) {
  return parse_statistics_json(io::read_file(path, kMaxFileBytes), path);
}

}  // namespace tern::pipeline
