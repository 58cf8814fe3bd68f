// Metrics, slices, the blessing decision and the evaluation reports.
#include "tern/pipeline/evaluation.h"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <nlohmann/json.hpp>
#include <sstream>

#include "tern/base/error.h"

namespace tern::pipeline {

using json = nlohmann::json;

namespace {

int64_t argmax(const std::vector<float>& v) {
  return static_cast<int64_t>(std::max_element(v.begin(), v.end()) - v.begin());
}

// -log softmax(logits)[label], computed stably in double.
double cross_entropy(const std::vector<float>& logits, int64_t label) {
  double m = -INFINITY;
  for (float x : logits) m = std::max(m, static_cast<double>(x));
  double sum = 0;
  for (float x : logits) sum += std::exp(static_cast<double>(x) - m);
  return std::log(sum) + m - static_cast<double>(logits[static_cast<size_t>(label)]);
}

std::string num(double v, int digits = 4) {
  std::ostringstream os;
  os << std::fixed << std::setprecision(digits) << v;
  return os.str();
}

json metrics_json(const Metrics& m) {
  return {{"count", m.count}, {"accuracy", m.accuracy}, {"loss", m.loss}};
}

}  // namespace

Metrics compute_metrics(const std::vector<EvalRow>& rows) {
  Metrics m;
  m.count = static_cast<int64_t>(rows.size());
  if (rows.empty()) return m;
  int64_t correct = 0;
  double loss = 0;
  for (const EvalRow& r : rows) {
    TERN_CHECK(r.label >= 0 && static_cast<size_t>(r.label) < r.logits.size(), "label ", r.label,
               " of ", r.logits.size(), " classes");
    correct += argmax(r.logits) == r.label;
    loss += cross_entropy(r.logits, r.label);
  }
  m.accuracy = static_cast<double>(correct) / static_cast<double>(rows.size());
  m.loss = loss / static_cast<double>(rows.size());
  return m;
}

std::vector<ClassMetrics> per_class_metrics(const std::vector<EvalRow>& rows,
                                            const std::vector<std::string>& class_names) {
  const size_t n = class_names.size();
  std::vector<int64_t> tp(n), predicted(n), actual(n);
  for (const EvalRow& r : rows) {
    const int64_t p = argmax(r.logits);
    if (static_cast<size_t>(r.label) < n) ++actual[static_cast<size_t>(r.label)];
    if (static_cast<size_t>(p) < n) ++predicted[static_cast<size_t>(p)];
    if (p == r.label && static_cast<size_t>(p) < n) ++tp[static_cast<size_t>(p)];
  }
  std::vector<ClassMetrics> out;
  for (size_t c = 0; c < n; ++c) {
    ClassMetrics m;
    m.name = class_names[c];
    m.support = actual[c];
    m.precision = predicted[c] ? static_cast<double>(tp[c]) / static_cast<double>(predicted[c]) : 0;
    m.recall = actual[c] ? static_cast<double>(tp[c]) / static_cast<double>(actual[c]) : 0;
    out.push_back(m);
  }
  return out;
}

std::vector<SliceMetrics> slice_metrics(const std::vector<EvalRow>& rows,
                                        const std::vector<std::string>& slice_by) {
  std::vector<SliceMetrics> out;
  for (const std::string& feature : slice_by) {
    std::map<std::string, std::vector<EvalRow>> groups;
    for (const EvalRow& r : rows) {
      auto it = r.slices.find(feature);
      groups[it == r.slices.end() ? "(missing)" : it->second].push_back(r);
    }
    std::vector<SliceMetrics> part;
    for (const auto& [value, group] : groups)
      part.push_back({feature, value, compute_metrics(group)});
    std::stable_sort(part.begin(), part.end(), [](const SliceMetrics& a, const SliceMetrics& b) {
      return a.metrics.count > b.metrics.count;
    });
    out.insert(out.end(), part.begin(), part.end());
  }
  return out;
}

void decide_blessing(const EvaluateSettings& settings, Evaluation& e) {
  e.checks.clear();
  const Metrics& m = e.overall;
  if (auto it = settings.thresholds.find("accuracy"); it != settings.thresholds.end()) {
    e.checks.push_back(
        {"accuracy >= threshold", m.accuracy >= it->second,
         str_cat("accuracy ", num(m.accuracy), m.accuracy >= it->second ? " >= " : " < ",
                 num(it->second), " (threshold)")});
  }
  if (auto it = settings.thresholds.find("loss"); it != settings.thresholds.end()) {
    e.checks.push_back({"loss <= threshold", m.loss <= it->second,
                        str_cat("loss ", num(m.loss), m.loss <= it->second ? " <= " : " > ",
                                num(it->second), " (threshold)")});
  }
  if (e.baseline && e.baseline->metrics) {
    const double base = e.baseline->metrics->accuracy;
    const bool ok = m.accuracy >= base - settings.max_regression;
    e.checks.push_back(
        {"no regression", ok,
         str_cat("accuracy ", num(m.accuracy), " vs served version ", e.baseline->version, "'s ",
                 num(base), " on the same eval data (", ok ? "within" : "a drop beyond",
                 " the allowed ", num(settings.max_regression), ")")});
  }
  e.blessed = m.count > 0 && std::all_of(e.checks.begin(), e.checks.end(),
                                         [](const BlessingCheck& c) { return c.passed; });
  std::string failed, passed;
  for (const BlessingCheck& c : e.checks) {
    std::string& list = c.passed ? passed : failed;
    list += (list.empty() ? "" : "; ") + c.detail;
  }
  if (m.count == 0) {
    e.reason = "no eval examples";
  } else if (!failed.empty()) {
    e.reason = failed;
  } else if (!passed.empty()) {
    e.reason = passed;
  } else {
    e.reason = "no thresholds and no served model to compare with";
  }
  if (e.baseline && !e.baseline->metrics)
    e.reason += str_cat("; served version ", e.baseline->version,
                        " could not be evaluated on this data: ", e.baseline->error);
  else if (!e.baseline)
    e.reason += "; nothing served yet to compare with";
}

std::string evaluation_json(const Evaluation& e, const EvaluateSettings& settings) {
  json per_class = json::array();
  for (const ClassMetrics& c : e.per_class)
    per_class.push_back({{"class", c.name},
                         {"support", c.support},
                         {"precision", c.precision},
                         {"recall", c.recall}});
  json slices = json::object();
  for (const SliceMetrics& s : e.slices) {
    json row = metrics_json(s.metrics);
    row["value"] = s.value;
    slices[s.feature].push_back(row);
  }
  json baseline = nullptr;
  if (e.baseline) {
    baseline = {{"version", e.baseline->version}, {"path", e.baseline->path}};
    if (e.baseline->metrics)
      baseline["metrics"] = metrics_json(*e.baseline->metrics);
    else
      baseline["error"] = e.baseline->error;
  }
  json checks = json::array();
  for (const BlessingCheck& c : e.checks)
    checks.push_back({{"check", c.name}, {"passed", c.passed}, {"detail", c.detail}});
  json j = {{"model_name", e.model_name},
            {"overall", metrics_json(e.overall)},
            {"per_class", per_class},
            {"slices", slices},
            {"baseline", baseline},
            {"thresholds", settings.thresholds},
            {"max_regression", settings.max_regression},
            {"checks", checks},
            {"blessed", e.blessed},
            {"reason", e.reason}};
  return j.dump(2) + "\n";
}

std::string evaluation_markdown(const Evaluation& e, const EvaluateSettings& settings) {
  std::ostringstream os;
  os << "# Evaluation of `" << e.model_name << "`\n\n"
     << "**" << (e.blessed ? "Blessed" : "Not blessed") << "**: " << e.reason << "\n\n"
     << "Evaluated through the exported model (the served signature, raw features in) on "
     << e.overall.count << " eval examples.\n\n## Checks\n\n";
  if (e.checks.empty()) os << "No thresholds set and no served model to compare with.\n";
  for (const BlessingCheck& c : e.checks)
    os << "- [" << (c.passed ? "x" : " ") << "] " << c.name << ": " << c.detail << "\n";
  os << "\n## Overall\n\n| metric | candidate |"
     << (e.baseline && e.baseline->metrics ? str_cat(" served version ", e.baseline->version, " |")
                                           : "")
     << "\n|---|---|" << (e.baseline && e.baseline->metrics ? "---|" : "") << "\n";
  auto row = [&](const char* name, double a, std::optional<double> b) {
    os << "| " << name << " | " << num(a) << " |" << (b ? " " + num(*b) + " |" : "") << "\n";
  };
  const bool has_base = e.baseline && e.baseline->metrics;
  row("accuracy", e.overall.accuracy,
      has_base ? std::optional(e.baseline->metrics->accuracy) : std::nullopt);
  const auto& m = settings.metrics;
  if (std::find(m.begin(), m.end(), "loss") != m.end())
    row("loss", e.overall.loss, has_base ? std::optional(e.baseline->metrics->loss) : std::nullopt);
  os << "| examples | " << e.overall.count << " |"
     << (has_base ? str_cat(" ", e.baseline->metrics->count, " |") : "") << "\n";
  if (e.baseline && !e.baseline->metrics)
    os << "\nServed version " << e.baseline->version << " (" << e.baseline->path
       << ") could not be evaluated on this data: " << e.baseline->error << "\n";
  if (!e.per_class.empty()) {
    os << "\n## Per class\n\n| class | examples | precision | recall |\n|---|---|---|---|\n";
    for (const ClassMetrics& c : e.per_class)
      os << "| " << c.name << " | " << c.support << " | " << num(c.precision, 3) << " | "
         << num(c.recall, 3) << " |\n";
  }
  std::string feature;
  for (const SliceMetrics& s : e.slices) {
    if (s.feature != feature) {
      feature = s.feature;
      os << "\n## Sliced by `" << feature << "`\n\n| value | examples | accuracy | loss |\n"
         << "|---|---|---|---|\n";
    }
    os << "| " << s.value << " | " << s.metrics.count << " | " << num(s.metrics.accuracy, 3)
       << " | " << num(s.metrics.loss, 3) << " |\n";
  }
  return os.str();
}

}  // namespace tern::pipeline
