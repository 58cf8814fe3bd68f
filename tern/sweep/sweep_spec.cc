// load_sweep: the sweep file read section by section with config::Section (checked keys, file:line,
// did-you-mean); the search space's values kept as TOML text for `tern train --set`.
#include "tern/sweep/sweep_spec.h"

#include <toml++/toml.h>
#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <sstream>

#include "tern/config/config_section.h"
#include "tern/config/toml_text.h"
#include "tern/io/atomic_file.h"

namespace tern::sweep {
namespace {

constexpr uint64_t kMaxSweepBytes = uint64_t{16} << 20;  // like a config file

using config::config_error;
using config::Section;

// --- values ---

ParamValue param_from_node(const toml::node& n, const std::string& file, const std::string& key) {
  if (auto v = n.value_exact<int64_t>()) return {std::to_string(*v), static_cast<double>(*v)};
  if (auto v = n.value_exact<double>()) {
    if (!std::isfinite(*v))
      config_error(file, n.source(), str_cat("'", key, "': not a finite number"));
    return number_param(*v);
  }
  if (auto v = n.value_exact<bool>()) return {*v ? "true" : "false", *v};
  if (auto v = n.value_exact<std::string>()) {
    std::ostringstream os;
    os << toml::toml_formatter{toml::value<std::string>(*v)};
    return {os.str(), *v};
  }
  if (const toml::array* arr = n.as_array()) {  // e.g. model.args.units = [64, 32]
    std::ostringstream os;
    os << toml::toml_formatter{*arr};
    return {os.str(), os.str()};
  }
  config_error(file, n.source(),
               str_cat("'", key, "': values must be numbers, strings, booleans or arrays"));
}

std::vector<ParamValue> param_list(const toml::node& n, const std::string& file,
                                   const std::string& key) {
  const toml::array* arr = n.as_array();
  if (!arr) config_error(file, n.source(), str_cat("'", key, "' must be an array of values"));
  if (arr->empty()) config_error(file, n.source(), str_cat("'", key, "': empty list of values"));
  std::vector<ParamValue> out;
  for (const auto& e : *arr) {
    out.push_back(param_from_node(e, file, key));
    if (out.back().value.index() != out.front().value.index())
      config_error(file, e.source(), str_cat("'", key, "': values of mixed types"));
  }
  return out;
}

bool is_distribution(const toml::table& t) {
  return t.contains("uniform") || t.contains("log_uniform") || t.contains("choice");
}

using Leaves = std::vector<std::pair<std::string, const toml::node*>>;

void collect_leaves(const toml::table& t, const std::string& prefix, Leaves& out) {
  for (const auto& [k, v] : t) {
    std::string key = prefix.empty() ? std::string(k.str()) : prefix + "." + std::string(k.str());
    if (const toml::table* sub = v.as_table(); sub && !is_distribution(*sub)) {
      collect_leaves(*sub, key, out);
    } else {
      out.emplace_back(key, &v);
    }
  }
}

// Leaves of a table as dotted keys: quoted ("a.b" = ...) and nested (a.b = ...) forms alike, in
// the file's order (toml++ sorts a table's keys; the grid's last key must vary fastest).
void leaves(const toml::table& t, const std::string& prefix, Leaves& out) {
  collect_leaves(t, prefix, out);
  std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) {
    const toml::source_position pa = a.second->source().begin, pb = b.second->source().begin;
    return pa.line != pb.line ? pa.line < pb.line : pa.column < pb.column;
  });
}

RandomParam random_param(const std::string& key, const toml::node& n, const std::string& file) {
  const toml::table* t = n.as_table();
  if (!t || t->size() != 1)
    config_error(file, n.source(),
                 str_cat("'", key, "' must be one of {uniform = [low, high]}, {log_uniform = ",
                         "[low, high]}, {choice = [values]}"));
  RandomParam p{.key = key};
  const auto first = t->begin();
  const std::string name(first->first.str());
  const toml::node& value = first->second;
  if (name == "choice") {
    p.distribution = Distribution::kChoice;
    p.choices = param_list(value, file, key + ".choice");
    return p;
  }
  p.distribution = name == "uniform" ? Distribution::kUniform : Distribution::kLogUniform;
  const toml::array* arr = value.as_array();
  std::vector<double> bounds;
  if (arr) {
    for (const auto& e : *arr) {
      if (auto d = e.value<double>()) bounds.push_back(*d);
    }
  }
  if (!arr || arr->size() != 2 || bounds.size() != 2)
    config_error(file, value.source(),
                 str_cat("'", key, ".", name, "' must be [low, high] (two numbers)"));
  p.low = bounds[0];
  p.high = bounds[1];
  if (!(p.low < p.high))
    config_error(file, value.source(), str_cat("'", key, "': low must be < high"));
  if (p.distribution == Distribution::kLogUniform && p.low <= 0)
    config_error(file, value.source(), str_cat("'", key, "': log_uniform needs low > 0"));
  return p;
}

// --- sections ---

void read_search(Section& top, const toml::table& root, SweepSpec& s) {
  const bool has_grid = top.has("grid"), has_random = top.has("random");
  if (has_grid == has_random)
    top.error(has_grid ? "random" : "grid",
              str_cat(s.path, ": give exactly one search space: [grid] or [random]"));
  if (has_grid) {
    top.sub("grid");  // its keys are config keys, read below
    Leaves keys;
    leaves(*root["grid"].as_table(), "", keys);
    if (keys.empty()) top.error("grid", "[grid] is empty: give at least one key and its values");
    for (const auto& [key, node] : keys)
      s.search.grid.push_back({key, param_list(*node, s.path, key)});
    return;
  }
  s.search.method = SearchSpace::Method::kRandom;
  Section random = top.sub("random");
  int64_t trials = 0, seed = 0;
  random.read("trials", trials);
  random.read("seed", seed);
  if (trials < 1) random.error("trials", "key 'random.trials' must be >= 1 (trials to sample)");
  s.search.random_trials = trials;
  s.search.seed = static_cast<uint64_t>(seed);
  Section params = random.sub("params");
  random.finish();
  const toml::table* table = root["random"]["params"].as_table();
  Leaves keys;
  if (table) leaves(*table, "", keys);
  if (keys.empty())
    random.error("params", "[random.params] is empty: give at least one key and its distribution");
  for (const auto& [key, node] : keys) s.search.random.push_back(random_param(key, *node, s.path));
}

void read_objective(Section& top, SweepSpec& s) {
  Section o = top.sub("objective");
  std::string mode = "auto";
  o.read("metric", s.objective.metric);
  o.read("mode", mode);
  if (s.objective.metric.empty()) o.error("metric", "key 'objective.metric' is empty");
  if (mode != "max" && mode != "min" && mode != "auto")
    o.error("mode", str_cat("key 'objective.mode' = '", mode, "' is not one of auto, max, min"));
  if (mode == "auto") {  // as Keras: lower is better for losses and errors
    const std::string& m = s.objective.metric;
    mode =
        m.find("loss") != std::string::npos || m.find("error") != std::string::npos ? "min" : "max";
  }
  s.objective.mode = mode == "max" ? Objective::Mode::kMax : Objective::Mode::kMin;
  o.finish();
}

// Seconds from a number or "90s", "30m", "2h", "1h30m".
double read_duration(Section& b, const toml::table* table, const std::string& key) {
  const toml::node* n = table ? table->get(key) : nullptr;
  if (!n) return 0;
  if (auto d = n->value<double>(); d && !n->is_string()) {
    if (*d < 0) b.error(key, str_cat("key 'budget.", key, "' must be >= 0"));
    return *d;
  }
  const std::optional<std::string> text = n->value_exact<std::string>();
  double total = 0;
  size_t i = 0;
  bool ok = text && !text->empty();
  while (ok && i < text->size()) {
    double v = 0;
    auto [end, ec] = std::from_chars(text->data() + i, text->data() + text->size(), v);
    size_t at = static_cast<size_t>(end - text->data());
    if (ec != std::errc() || at >= text->size()) {
      ok = false;
      break;
    }
    char unit = (*text)[at];
    total += v * (unit == 'h' ? 3600 : unit == 'm' ? 60 : unit == 's' ? 1 : -1e300);
    ok = unit == 'h' || unit == 'm' || unit == 's';
    i = at + 1;
  }
  if (!ok || total < 0)
    b.error(key, str_cat("key 'budget.", key,
                         "' must be seconds or a duration such as \"90s\", \"30m\", \"1h30m\""));
  return total;
}

void read_budget(Section& top, const toml::table& root, SweepSpec& s) {
  Section b = top.sub("budget");
  b.read("max_trials", s.budget.max_trials);
  b.read("max_epochs", s.budget.max_epochs);
  if (root["budget"]["max_time"].is_string()) {  // marks the key known; parsed below
    std::string text;
    b.read("max_time", text);
  } else {
    b.read("max_time", s.budget.max_seconds);
  }
  s.budget.max_seconds = read_duration(b, root["budget"].as_table(), "max_time");
  if (s.budget.max_trials < 0) b.error("max_trials", "key 'budget.max_trials' must be >= 0");
  if (s.budget.max_epochs < 0) b.error("max_epochs", "key 'budget.max_epochs' must be >= 0");
  b.finish();
}

void read_early_stopping(Section& top, SweepSpec& s) {
  Section e = top.sub("early_stopping");
  std::string rule = "none";
  e.read("rule", rule);
  EarlyStoppingSpec& es = s.early_stopping;
  if (rule == "none") {
    es.rule = EarlyStoppingSpec::Rule::kNone;
  } else if (rule == "median") {
    es.rule = EarlyStoppingSpec::Rule::kMedian;
    e.read("grace_epochs", es.grace_epochs);
    e.read("min_trials", es.min_trials);
    if (es.grace_epochs < 1)
      e.error("grace_epochs", "key 'early_stopping.grace_epochs' must be >= 1");
    if (es.min_trials < 1) e.error("min_trials", "key 'early_stopping.min_trials' must be >= 1");
  } else if (rule == "asha") {
    es.rule = EarlyStoppingSpec::Rule::kAsha;
    e.read("reduction_factor", es.reduction_factor);
    e.read("min_epochs", es.min_epochs);
    e.read("max_epochs", es.max_epochs);
    if (!(es.reduction_factor >= 1.5))
      e.error("reduction_factor", "key 'early_stopping.reduction_factor' must be >= 1.5");
    if (es.min_epochs < 1) e.error("min_epochs", "key 'early_stopping.min_epochs' must be >= 1");
    if (es.max_epochs < 0) e.error("max_epochs", "key 'early_stopping.max_epochs' must be >= 0");
  } else {
    e.error("rule",
            str_cat("key 'early_stopping.rule' = '", rule, "' is not one of none, median, asha"));
  }
  e.finish();
}

void read_launcher(Section& top, SweepSpec& s) {
  Section l = top.sub("launcher");
  std::string kind = "local";
  l.read("kind", kind);
  LauncherSpec& ls = s.launcher;
  if (kind == "local") {
    ls.kind = LauncherSpec::Kind::kLocal;
  } else if (kind == "slurm") {
    ls.kind = LauncherSpec::Kind::kSlurm;
    l.read("partition", ls.partition);
    l.read("sbatch_args", ls.sbatch_args);
  } else if (kind == "mpirun") {
    ls.kind = LauncherSpec::Kind::kMpirun;
    l.read("hosts", ls.hosts);
    l.read("mpirun_args", ls.mpirun_args);
    if (ls.hosts.empty())
      l.error("hosts", "launcher 'mpirun' needs 'launcher.hosts' (host or host:slots)");
  } else {
    l.error("kind",
            str_cat("key 'launcher.kind' = '", kind, "' is not one of local, slurm, mpirun"));
  }
  l.finish();
}

}  // namespace

bool Objective::better(double a, double b) const {
  if (std::isnan(a)) return false;
  if (std::isnan(b)) return true;
  return mode == Mode::kMax ? a > b : a < b;
}

std::string rule_name(EarlyStoppingSpec::Rule rule) {
  switch (rule) {
    case EarlyStoppingSpec::Rule::kMedian:
      return "median";
    case EarlyStoppingSpec::Rule::kAsha:
      return "asha";
    default:
      return "none";
  }
}

std::string launcher_name(LauncherSpec::Kind kind) {
  switch (kind) {
    case LauncherSpec::Kind::kSlurm:
      return "slurm";
    case LauncherSpec::Kind::kMpirun:
      return "mpirun";
    default:
      return "local";
  }
}

std::string format_param(const ParamValue& v) {
  if (const auto* s = std::get_if<std::string>(&v.value)) return *s;
  return v.toml;
}

ParamValue number_param(double v) {
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), v);
  std::string text(buf, end);
  if (text.find_first_of(".eEn") == std::string::npos) text += ".0";  // a TOML float, not an int
  return {text, v};
}

SweepSpec load_sweep(const std::string& path) {
  if (!std::filesystem::exists(path))
    throw_error(ErrorCode::kNotFound, "sweep file '", path, "' does not exist");
  toml::table root;
  try {
    root = config::parse_toml(io::read_file(path, kMaxSweepBytes), path);
  } catch (const toml::parse_error& e) {
    throw_error(ErrorCode::kInvalidArgument, path, ":", e.source().begin.line, ":",
                e.source().begin.column, ": TOML syntax error: ", e.description());
  }
  SweepSpec s;
  s.path = path;
  Section top(&root, "", path);
  std::string base;
  top.read("base", base);
  if (base.empty())
    top.error("base", str_cat(path, ": key 'base' (the training config) is required"));
  std::filesystem::path bp(base);
  s.base_config =
      bp.is_absolute()
          ? base
          : (std::filesystem::path(path).parent_path() / bp).lexically_normal().string();
  top.read("out", s.out_dir);
  top.read("checkpoints", s.checkpoints);
  read_search(top, root, s);
  read_objective(top, s);
  read_budget(top, root, s);
  Section par = top.sub("parallel");
  par.read("trials", s.parallel);
  par.read("threads_per_trial", s.threads_per_trial);
  if (s.parallel < 1) par.error("trials", "key 'parallel.trials' must be >= 1");
  if (s.threads_per_trial < 0)
    par.error("threads_per_trial", "key 'parallel.threads_per_trial' must be >= 0");
  par.finish();
  read_early_stopping(top, s);
  read_launcher(top, s);
  std::string order = "auto";
  top.read("order", order);
  if (order != "auto" && order != "file" && order != "shuffled")
    top.error("order", str_cat("key 'order' = '", order, "' is not one of auto, file, shuffled"));
  s.shuffled_order = order == "shuffled" ||
                     (order == "auto" && s.early_stopping.rule != EarlyStoppingSpec::Rule::kNone);
  top.sub("set");
  if (const toml::table* set = root["set"].as_table()) {
    Leaves keys;
    leaves(*set, "", keys);
    for (const auto& [key, node] : keys)
      s.fixed.push_back({key, param_from_node(*node, path, "set." + key)});
  }
  top.finish();
  return s;
}

}  // namespace tern::sweep
