// load_pipeline / parse_pipeline: the pipeline file read section by section with config::Section
// (checked keys, file:line, did-you-mean); settings_json for the cache keys.
#include "tern/pipeline/pipeline_file.h"

#include <toml++/toml.h>
#include <algorithm>
#include <filesystem>
#include <iomanip>
#include <nlohmann/json.hpp>
#include <sstream>

#include "tern/config/config_section.h"
#include "tern/config/toml_text.h"
#include "tern/io/atomic_file.h"
#include "tern/pipeline/schema.h"
#include "tern/transform/spec.h"

namespace tern::pipeline {

namespace fs = std::filesystem;
using config::config_error;
using config::Section;
using json = nlohmann::json;

namespace {

constexpr uint64_t kMaxPipelineBytes = 16 << 20;

// A path from the file: absolute as given, else against the pipeline file's folder; made absolute
// (the store records it, and a run from another folder must name the same file).
std::string resolve(const std::string& file, const std::string& p) {
  if (p.empty()) return p;
  fs::path path = fs::path(p).is_absolute() ? fs::path(p) : fs::path(file).parent_path() / p;
  return fs::absolute(path).lexically_normal().string();
}

void check_exists(Section& s, const std::string& key, const std::string& path, bool check_files) {
  if (!check_files) return;
  std::error_code ec;
  if (!fs::exists(path, ec))
    s.error(key, str_cat("key '", s.full(key), "': '", path, "' does not exist"));
}

// A TOML value as JSON (tables are sorted maps in toml++: canonical).
json to_json(const toml::node& n) {
  if (const toml::table* t = n.as_table()) {
    json j = json::object();
    for (const auto& [k, v] : *t) j[std::string(k.str())] = to_json(v);
    return j;
  }
  if (const toml::array* a = n.as_array()) {
    json j = json::array();
    for (const auto& e : *a) j.push_back(to_json(e));
    return j;
  }
  if (auto v = n.value_exact<bool>()) return *v;
  if (auto v = n.value_exact<int64_t>()) return *v;
  if (auto v = n.value_exact<double>()) return *v;
  if (auto v = n.value_exact<std::string>()) return *v;
  std::ostringstream os;  // dates and times: their TOML text
  n.visit([&](const auto& x) { os << x; });
  return os.str();
}

// --- sections ---

void read_pipeline_table(Section& top, PipelineSpec& s, const std::string& out_dir) {
  Section p = top.sub("pipeline");
  if (!p.present())
    config_error(s.path, toml::source_region{},
                 "section [pipeline] is required (name = \"...\" at least)");
  p.read("name", s.name);
  if (s.name.empty()) p.error("name", "key 'pipeline.name' is required (a non-empty string)");
  if (s.name.find('/') != std::string::npos || s.name == "." || s.name == "..")
    p.error("name", str_cat("key 'pipeline.name' = '", s.name, "' must not be a path"));
  p.read("root", s.root);
  p.read("serving_base_path", s.serving_base_path);
  p.read("model_name", s.model_name);
  p.finish();
  if (!out_dir.empty()) s.root = out_dir;
  if (s.root.empty()) s.root = "runs/pipelines/" + s.name;
  if (s.model_name.empty()) s.model_name = s.name;
  if (s.model_name.find('/') != std::string::npos)
    p.error("model_name",
            str_cat("key 'pipeline.model_name' = '", s.model_name, "' must not hold '/'"));
  if (s.serving_base_path.empty())
    s.serving_base_path = (fs::path(s.root) / "serving" / s.model_name).string();
}

void read_ingest(Section& top, PipelineSpec& s, bool check_files) {
  Section in = top.sub("ingest");
  if (!in.present()) return;
  IngestSettings g;
  in.read("format", g.format);
  static const std::vector<std::string> kFormats = {"", "csv", "tfrecord", "idx", "image_folder"};
  if (std::find(kFormats.begin(), kFormats.end(), g.format) == kFormats.end())
    in.error("format", str_cat("key 'ingest.format' = '", g.format,
                               "' is not one of csv, tfrecord, idx, image_folder"));
  in.read_strings("paths", g.paths);
  for (auto& p : g.paths) {
    p = resolve(s.path, p);
    check_exists(in, "paths", p, check_files);
  }
  in.read("labels", g.labels);
  if (!g.labels.empty()) {
    g.labels = resolve(s.path, g.labels);
    check_exists(in, "labels", g.labels, check_files);
  }
  Section cols = in.sub("columns");
  for (const std::string& k : cols.keys()) {
    std::string type;
    cols.read(k, type);
    if (type != "categorical" && type != "numeric")
      cols.error(k, str_cat("key 'ingest.columns.", k, "' = '", type,
                            "' is not one of categorical, numeric"));
    g.column_types[k] = type;
  }
  cols.finish();
  Section ratios = in.sub("ratios");
  if (ratios.present()) {
    g.ratios.clear();
    double total = 0;
    for (const std::string& k : ratios.keys()) {
      double r = 0;
      ratios.read(k, r);
      if (!(r > 0 && r <= 1))
        ratios.error(k, str_cat("key 'ingest.ratios.", k, "' must be in (0, 1]"));
      g.ratios.emplace_back(k, r);
      total += r;
    }
    if (g.ratios.empty()) in.error("ratios", "key 'ingest.ratios' is empty");
    if (std::abs(total - 1) > 1e-6)
      in.error("ratios", str_cat("key 'ingest.ratios': the ratios add up to ", total, ", not 1"));
  }
  in.read("split_key", g.split_key);
  Section splits = in.sub("splits");
  for (const std::string& k : splits.keys()) {
    std::vector<std::string> files;
    splits.read_strings(k, files);
    if (files.empty()) splits.error(k, str_cat("key 'ingest.splits.", k, "' is empty"));
    for (auto& f : files) {
      f = resolve(s.path, f);
      check_exists(splits, k, f, check_files);
    }
    g.split_files[k] = files;
  }
  splits.finish();
  in.read("shards", g.shards);
  if (g.shards < 1 || g.shards > 4096)
    in.error("shards", "key 'ingest.shards' must be in [1, 4096]");
  in.read("delimiter", g.delimiter);
  if (g.delimiter.size() != 1)
    in.error("delimiter", "key 'ingest.delimiter' must be one character");
  if (g.paths.empty() && g.split_files.empty())
    in.error("paths", "[ingest] needs `paths` (the input files) or `splits` (files per split)");
  if (!g.paths.empty() && !g.split_files.empty())
    in.error("splits", "[ingest]: give `paths` (split by ratios) or `splits`, not both");
  if (ratios.present() && !g.split_files.empty())
    in.error("ratios",
             "[ingest]: `ratios` split `paths` by hash; with `splits` each split has its "
             "own files");
  if (!g.split_files.empty() && !g.split_files.count("train"))
    in.error("splits", "key 'ingest.splits' needs a 'train' split");
  if (g.split_files.empty() && std::none_of(g.ratios.begin(), g.ratios.end(),
                                            [](const auto& r) { return r.first == "train"; }))
    in.error("ratios", "key 'ingest.ratios' needs a 'train' split");
  in.finish();
  s.ingest = std::move(g);
}

void read_statistics(Section& top, PipelineSpec& s) {
  Section st = top.sub("statistics");
  if (!st.present()) return;
  StatisticsSettings g;
  st.read("top_k", g.top_k);
  st.read("histogram_bins", g.histogram_bins);
  st.read_numbers("quantiles", g.quantiles);
  st.read("max_value_counts", g.max_value_counts);
  if (g.top_k < 1 || g.top_k > 100000)
    st.error("top_k", "key 'statistics.top_k' must be in [1, 100000]");
  if (g.histogram_bins < 1 || g.histogram_bins > 10000)
    st.error("histogram_bins", "key 'statistics.histogram_bins' must be in [1, 10000]");
  if (g.quantiles.empty() || g.quantiles.size() > 1000)
    st.error("quantiles", "key 'statistics.quantiles' must hold 1 to 1000 numbers");
  for (double q : g.quantiles) {
    if (!(q >= 0 && q <= 1))
      st.error("quantiles", "key 'statistics.quantiles': every quantile must be in [0, 1]");
  }
  if (g.max_value_counts < 1 || g.max_value_counts > 100000000)
    st.error("max_value_counts", "key 'statistics.max_value_counts' must be in [1, 100000000]");
  st.finish();
  s.statistics = g;
}

void read_schema(Section& top, PipelineSpec& s, bool check_files) {
  Section sc = top.sub("schema");
  if (!sc.present()) return;
  SchemaSettings g;
  sc.read("path", g.path);
  if (!g.path.empty()) {
    g.path = resolve(s.path, g.path);
    check_exists(sc, "path", g.path, check_files);
  }
  if (!g.path.empty() && check_files) {
    try {
      const std::string schema_text = io::read_file(g.path, kMaxPipelineBytes);
      parse_schema(schema_text, g.path);  // checked keys: file:line
    } catch (const config::ConfigError&) {
      throw;
    } catch (const Error& e) {
      throw config::ConfigError(e.code(), str_cat("key 'schema.path': ", e.message()));
    }
  }
  sc.read("required_fraction", g.required_fraction);
  sc.read("max_domain_size", g.max_domain_size);
  sc.read("threshold", g.threshold);
  if (!(g.required_fraction > 0 && g.required_fraction <= 1))
    sc.error("required_fraction", "key 'schema.required_fraction' must be in (0, 1]");
  if (g.max_domain_size < 0 || g.max_domain_size > 1000000)
    sc.error("max_domain_size", "key 'schema.max_domain_size' must be in [0, 1000000]");
  if (!(g.threshold >= 0 && g.threshold <= 1))
    sc.error("threshold", "key 'schema.threshold' must be in [0, 1]");
  if (!g.path.empty()) {
    for (const char* k : {"required_fraction", "max_domain_size", "threshold"}) {
      if (sc.has(k))
        sc.error(k, str_cat("key 'schema.", k, "' is for an inferred schema, not a pinned `path`"));
    }
  }
  sc.finish();
  s.schema = g;
}

void read_validate(Section& top, PipelineSpec& s) {
  Section v = top.sub("validate");
  if (!v.present()) return;
  ValidateSettings g;
  v.read("compare_previous", g.compare_previous);
  v.finish();
  s.validate = g;
}

void read_train(Section& top, PipelineSpec& s, bool check_files) {
  Section t = top.sub("train");
  if (!t.present()) return;
  TrainSettings g;
  t.read("config", g.config);
  if (g.config.empty())
    t.error("config", "key 'train.config' is required (a tern training config for the model)");
  g.config = resolve(s.path, g.config);
  check_exists(t, "config", g.config, check_files);
  t.read_optional("epochs", g.epochs);
  t.read_optional("batch_size", g.batch_size);
  t.read_optional("steps_per_epoch", g.steps_per_epoch);
  t.read_optional("seed", g.seed);
  t.read_optional("learning_rate", g.learning_rate);
  if (g.epochs && *g.epochs < 1) t.error("epochs", "key 'train.epochs' must be >= 1");
  if (g.batch_size && *g.batch_size < 1)
    t.error("batch_size", "key 'train.batch_size' must be >= 1");
  if (g.steps_per_epoch && *g.steps_per_epoch < 1)
    t.error("steps_per_epoch", "key 'train.steps_per_epoch' must be >= 1");
  if (g.learning_rate && !(*g.learning_rate > 0))
    t.error("learning_rate", "key 'train.learning_rate' must be > 0");
  t.read_strings("set", g.overrides);
  for (const std::string& o : g.overrides) {
    if (o.find('=') == std::string::npos)
      t.error("set", str_cat("key 'train.set': '", o, "' is not key=value"));
    if (o.rfind("data.", 0) == 0 || o.rfind("output.", 0) == 0)
      t.error("set", str_cat("key 'train.set': '", o,
                             "': [data] and [output] are generated by the pipeline"));
  }
  t.finish();
  if (check_files) {
    // The training config's own keys (its [data] and [output] replaced, as train will).
    std::vector<std::string> overrides = {"data={}", "output={}"};
    std::vector<std::string> more = training_overrides(g);
    overrides.insert(overrides.end(), more.begin(), more.end());
    config::load_config(g.config, overrides);
  }
  s.train = std::move(g);
}

void read_evaluate(Section& top, PipelineSpec& s) {
  Section e = top.sub("evaluate");
  if (!e.present()) return;
  EvaluateSettings g;
  e.read_strings("metrics", g.metrics);
  for (const std::string& m : g.metrics) {
    if (m != "accuracy" && m != "loss" && m != "per_class")
      e.error("metrics",
              str_cat("key 'evaluate.metrics': '", m, "' is not one of accuracy, loss, per_class"));
  }
  e.read_strings("slice_by", g.slice_by);
  Section th = e.sub("thresholds");
  for (const std::string& k : th.keys()) {
    if (k != "accuracy" && k != "loss") {
      std::string best = ops::closest_name(k, {"accuracy", "loss"});
      th.error(
          k,
          str_cat("unknown key 'evaluate.thresholds.", k, "'",
                  best.empty() ? "" : str_cat(" (did you mean 'evaluate.thresholds.", best, "'?)"),
                  ": thresholds are accuracy (at least) and loss (at most)"));
    }
    double v = 0;
    th.read(k, v);
    if (k == "accuracy" && !(v >= 0 && v <= 1))
      th.error(k, "key 'evaluate.thresholds.accuracy' must be in [0, 1]");
    if (k == "loss" && !(v >= 0)) th.error(k, "key 'evaluate.thresholds.loss' must be >= 0");
    g.thresholds[k] = v;
  }
  th.finish();
  e.read("max_regression", g.max_regression);
  if (!(g.max_regression >= 0 && g.max_regression <= 1))
    e.error("max_regression", "key 'evaluate.max_regression' must be in [0, 1]");
  e.read("batch_size", g.batch_size);
  if (g.batch_size < 1 || g.batch_size > 65536)
    e.error("batch_size", "key 'evaluate.batch_size' must be in [1, 65536]");
  e.finish();
  s.evaluate = std::move(g);
}

void read_push(Section& top, PipelineSpec& s) {
  Section p = top.sub("push");
  if (!p.present()) return;
  PushSettings g;
  p.read("enabled", g.enabled);
  p.finish();
  s.push = g;
}

// A section that needs another one.
void require(const PipelineSpec& s, const toml::table& root, const std::string& section,
             const std::string& needed, const std::string& why) {
  if (!s.has(section) || s.has(needed)) return;
  config_error(s.path, root[section].node()->source(),
               str_cat("[", section, "] needs [", needed, "] (", why, ")"));
}

}  // namespace

std::vector<std::string> training_overrides(const TrainSettings& s) {
  std::vector<std::string> o;
  if (s.epochs) o.push_back(str_cat("training.epochs=", *s.epochs));
  if (s.batch_size) o.push_back(str_cat("training.batch_size=", *s.batch_size));
  if (s.steps_per_epoch) o.push_back(str_cat("training.steps_per_epoch=", *s.steps_per_epoch));
  if (s.seed) o.push_back(str_cat("training.seed=", *s.seed));
  if (s.learning_rate) {
    std::ostringstream os;
    os << std::setprecision(17) << *s.learning_rate;
    o.push_back("optimizer.learning_rate=" + os.str());
  }
  o.insert(o.end(), s.overrides.begin(), s.overrides.end());
  return o;
}

bool PipelineSpec::has(const std::string& c) const {
  if (c == "ingest") return ingest.has_value();
  if (c == "statistics") return statistics.has_value();
  if (c == "schema") return schema.has_value();
  if (c == "validate") return validate.has_value();
  if (c == "transform") return transform.has_value();
  if (c == "train") return train.has_value();
  if (c == "evaluate") return evaluate.has_value();
  if (c == "push") return push.has_value();
  return false;
}

std::vector<std::string> PipelineSpec::components() const {
  std::vector<std::string> out;
  for (const std::string& c : component_names()) {
    if (has(c)) out.push_back(c);
  }
  return out;
}

std::string PipelineSpec::settings_json(const std::string& c) const {
  json j = json::object();
  if (c == "ingest" && ingest) {
    const IngestSettings& g = *ingest;
    json ratios = json::array();
    if (g.split_files.empty()) {
      for (const auto& [k, v] : g.ratios) ratios.push_back({k, v});
    }
    j = {{"format", g.format},        {"paths", g.paths},   {"labels", g.labels},
         {"columns", g.column_types}, {"ratios", ratios},   {"split_key", g.split_key},
         {"splits", g.split_files},   {"shards", g.shards}, {"delimiter", g.delimiter}};
  } else if (c == "statistics" && statistics) {
    j = {{"top_k", statistics->top_k},
         {"histogram_bins", statistics->histogram_bins},
         {"quantiles", statistics->quantiles},
         {"max_value_counts", statistics->max_value_counts}};
  } else if (c == "schema" && schema) {
    j = {{"path", schema->path}};
    if (schema->path.empty()) {
      j["required_fraction"] = schema->required_fraction;
      j["max_domain_size"] = schema->max_domain_size;
      j["threshold"] = schema->threshold;
    }
  } else if (c == "validate" && validate) {
    j = {{"compare_previous", validate->compare_previous}};
  } else if (c == "transform" && transform) {
    j = json::parse(transform->canonical_json);
  } else if (c == "train" && train) {
    const TrainSettings& g = *train;
    j = {{"config", g.config}, {"set", g.overrides}};
    if (g.epochs) j["epochs"] = *g.epochs;
    if (g.batch_size) j["batch_size"] = *g.batch_size;
    if (g.steps_per_epoch) j["steps_per_epoch"] = *g.steps_per_epoch;
    if (g.seed) j["seed"] = *g.seed;
    if (g.learning_rate) j["learning_rate"] = *g.learning_rate;
  } else if (c == "evaluate" && evaluate) {
    const EvaluateSettings& g = *evaluate;
    j = {{"metrics", g.metrics},       {"slice_by", g.slice_by},
         {"thresholds", g.thresholds}, {"max_regression", g.max_regression},
         {"batch_size", g.batch_size}, {"model_name", model_name}};
  } else if (c == "push" && push) {
    j = {{"enabled", push->enabled},
         {"serving_base_path", fs::absolute(serving_base_path).lexically_normal().string()}};
  }
  return j.dump();
}

PipelineSpec parse_pipeline(std::string_view text, const std::string& file,
                            const std::string& out_dir, bool check_files) {
  toml::table root;
  try {
    root = config::parse_toml(text, file);
  } catch (const toml::parse_error& e) {
    throw config::ConfigError(
        ErrorCode::kInvalidArgument,
        str_cat(file, ":", e.source().begin.line, ":", e.source().begin.column,
                ": TOML syntax error: ", e.description()));
  }
  PipelineSpec s;
  s.path = file;
  s.text = std::string(text);
  Section top(&root, "", file);
  read_pipeline_table(top, s, out_dir);
  read_ingest(top, s, check_files);
  read_statistics(top, s);
  read_schema(top, s, check_files);
  read_validate(top, s);
  if (top.has("transform")) {
    top.sub("transform");  // read by tern/transform's parser: checked keys, file:line
    try {
      transform::parse_transform_spec(text, file);
    } catch (const transform::SpecError& e) {
      throw config::ConfigError(e.code(), e.message());
    }
    s.transform = TransformSettings{to_json(*root["transform"].node()).dump()};
  }
  read_train(top, s, check_files);
  read_evaluate(top, s);
  read_push(top, s);
  top.finish();
  if (s.components().empty())
    config_error(file, toml::source_region{},
                 "no component: give at least one of [ingest], [statistics], [schema], "
                 "[validate], [transform], [train], [evaluate], [push]");
  require(s, root, "statistics", "ingest", "the data it describes");
  if (s.schema && s.schema->path.empty())
    require(s, root, "schema", "statistics", "the statistics it infers from; or pin `path`");
  require(s, root, "validate", "statistics", "the statistics it checks");
  require(s, root, "validate", "schema", "the schema it checks against");
  require(s, root, "transform", "ingest", "the data it analyzes and transforms");
  require(s, root, "train", "transform", "the transformed data it trains on");
  require(s, root, "evaluate", "train", "the model it evaluates");
  require(s, root, "push", "evaluate", "the blessing that decides the push");
  return s;
}

PipelineSpec load_pipeline(const std::string& path, const std::string& out_dir) {
  std::error_code ec;
  if (!fs::exists(path, ec))
    throw config::ConfigError(ErrorCode::kNotFound,
                              str_cat("pipeline file '", path, "' does not exist"));
  std::string text;
  try {
    text = io::read_file(path, kMaxPipelineBytes);
  } catch (const Error& e) {
    throw config::ConfigError(e.code(), str_cat("pipeline file ", e.message()));
  }
  return parse_pipeline(text, path, out_dir, true);
}

}  // namespace tern::pipeline
