// SweepState as JSON (NaN as null), written atomically.
#include "tern/sweep/sweep_state.h"

#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "tern/base/error.h"
#include "tern/io/atomic_file.h"

namespace tern::sweep {
namespace {

using nlohmann::json;

json number(double v) {
  return std::isfinite(v) ? json(v) : json(nullptr);
}
double number(const json& j) {
  return j.is_number() ? j.get<double>() : std::nan("");
}

json param_json(const ParamValue& v) {
  json value;
  std::visit([&](const auto& x) { value = x; }, v.value);
  return {{"toml", v.toml}, {"value", value}};
}

ParamValue param_from(const json& j) {
  ParamValue p{j.at("toml").get<std::string>(), 0.0};
  const json& v = j.at("value");
  if (v.is_boolean()) {
    p.value = v.get<bool>();
  } else if (v.is_string()) {
    p.value = v.get<std::string>();
  } else {
    p.value = v.get<double>();
  }
  return p;
}

json trial_json(const TrialRecord& t) {
  json overrides = json::array(), history = json::array(), test = json::object();
  for (const auto& o : t.overrides)
    overrides.push_back({{"key", o.key}, {"value", param_json(o.value)}});
  for (const auto& row : t.history) {
    json values = json::object();
    for (const auto& [k, v] : row.values) values[k] = number(v);
    history.push_back({{"epoch", row.epoch}, {"values", values}});
  }
  for (const auto& [k, v] : t.test_metrics) test[k] = number(v);
  return {{"id", t.id},
          {"name", t.name},
          {"overrides", overrides},
          {"sets", t.sets},
          {"status", status_name(t.status)},
          {"reason", t.reason},
          {"history", history},
          {"test_metrics", test},
          {"start_time", t.start_time},
          {"end_time", t.end_time},
          {"wall_seconds", t.wall_seconds},
          {"attempts", t.attempts},
          {"job", t.job}};
}

TrialStatus status_from(const std::string& s) {
  for (TrialStatus st : {TrialStatus::kPending, TrialStatus::kRunning, TrialStatus::kDone,
                         TrialStatus::kStopped, TrialStatus::kFailed}) {
    if (status_name(st) == s) return st;
  }
  throw_error(ErrorCode::kDataLoss, "unknown trial status '", s, "'");
}

TrialRecord trial_from(const json& j) {
  TrialRecord t;
  t.id = j.at("id").get<int>();
  t.name = j.at("name").get<std::string>();
  for (const auto& o : j.at("overrides"))
    t.overrides.push_back({o.at("key").get<std::string>(), param_from(o.at("value"))});
  t.sets = j.at("sets").get<std::vector<std::string>>();
  t.status = status_from(j.at("status").get<std::string>());
  t.reason = j.at("reason").get<std::string>();
  for (const auto& r : j.at("history")) {
    EpochRow row{.epoch = r.at("epoch").get<int64_t>()};
    for (const auto& [k, v] : r.at("values").items()) row.values[k] = number(v);
    t.history.push_back(std::move(row));
  }
  for (const auto& [k, v] : j.at("test_metrics").items()) t.test_metrics[k] = number(v);
  t.start_time = j.at("start_time").get<double>();
  t.end_time = j.at("end_time").get<double>();
  t.wall_seconds = j.at("wall_seconds").get<double>();
  t.attempts = j.at("attempts").get<int>();
  t.job = j.at("job").get<std::string>();
  return t;
}

}  // namespace

std::string status_name(TrialStatus s) {
  switch (s) {
    case TrialStatus::kPending:
      return "pending";
    case TrialStatus::kRunning:
      return "running";
    case TrialStatus::kDone:
      return "done";
    case TrialStatus::kStopped:
      return "stopped";
    case TrialStatus::kFailed:
      return "failed";
  }
  return "?";
}

void TrialRecord::add_row(const EpochRow& row) {
  if (row.epoch < 1) return;
  while (!history.empty() && history.back().epoch >= row.epoch) history.pop_back();
  history.push_back(row);
}

double TrialRecord::final_metric(const Objective& o) const {
  if (!o.per_epoch()) {
    auto it = test_metrics.find(o.metric);
    return it == test_metrics.end() ? std::nan("") : it->second;
  }
  if (history.empty()) return std::nan("");
  auto it = history.back().values.find(o.metric);
  return it == history.back().values.end() ? std::nan("") : it->second;
}

double TrialRecord::best_metric(const Objective& o) const {
  if (!o.per_epoch()) return final_metric(o);
  double best = std::nan("");
  for (const auto& row : history) {
    auto it = row.values.find(o.metric);
    if (it != row.values.end() && o.better(it->second, best)) best = it->second;
  }
  return best;
}

std::string state_path(const std::string& sweep_dir) {
  return sweep_dir + "/sweep_state.json";
}

void save_state(const std::string& sweep_dir, const SweepState& s) {
  json trials = json::array();
  for (const auto& t : s.trials) trials.push_back(trial_json(t));
  json j = {{"version", 1},
            {"sweep_file", s.sweep_file},
            {"base_config", s.base_config},
            {"objective",
             {{"metric", s.objective.metric},
              {"mode", s.objective.mode == Objective::Mode::kMax ? "max" : "min"}}},
            {"early_stopping", s.rule},
            {"epochs", s.epochs},
            {"hparams", s.hparams},
            {"start_time", s.start_time},
            {"trials", trials}};
  io::write_file_atomically(state_path(sweep_dir), j.dump(1) + "\n");
}

SweepState load_state(const std::string& sweep_dir) {
  const std::string path = state_path(sweep_dir);
  if (!std::filesystem::exists(path))
    throw_error(ErrorCode::kNotFound, "'", sweep_dir, "' holds no sweep (no ", path, ")");
  try {
    json j = json::parse(io::read_file(path));
    SweepState s;
    s.sweep_file = j.at("sweep_file").get<std::string>();
    s.base_config = j.at("base_config").get<std::string>();
    s.objective.metric = j.at("objective").at("metric").get<std::string>();
    s.objective.mode = j.at("objective").at("mode").get<std::string>() == "min"
                           ? Objective::Mode::kMin
                           : Objective::Mode::kMax;
    s.rule = j.at("early_stopping").get<std::string>();
    s.epochs = j.at("epochs").get<int64_t>();
    s.hparams = j.at("hparams").get<std::vector<std::string>>();
    s.start_time = j.at("start_time").get<double>();
    for (const auto& t : j.at("trials")) s.trials.push_back(trial_from(t));
    return s;
  } catch (const json::exception& e) {
    throw_error(ErrorCode::kDataLoss, path, ": not a sweep state: ", e.what());
  } catch (const Error& e) {
    throw_error(ErrorCode::kDataLoss, path, ": ", e.message());
  }
}

}  // namespace tern::sweep
