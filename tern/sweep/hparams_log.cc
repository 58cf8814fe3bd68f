// Sweep -> io::write_hparams_experiment / io::write_hparams_session.
#include "tern/sweep/hparams_log.h"

#include <cmath>
#include <filesystem>

#include "tern/config/config.h"
#include "tern/io/hparams_plugin.h"

namespace tern::sweep {
namespace {

io::HParamInfo info_for(const std::string& key, const std::vector<ParamValue>& values) {
  io::HParamInfo info{.name = key};
  if (values.empty()) return info;
  if (std::holds_alternative<bool>(values[0].value)) {
    info.type = io::HParamInfo::Type::kBool;
  } else if (std::holds_alternative<std::string>(values[0].value)) {
    info.type = io::HParamInfo::Type::kString;
    for (const auto& v : values) info.discrete_strings.push_back(std::get<std::string>(v.value));
  } else {
    for (const auto& v : values) info.discrete_numbers.push_back(std::get<double>(v.value));
  }
  return info;
}

io::HParamValue hparam_value(const ParamValue& v) {
  return std::visit([](const auto& x) -> io::HParamValue { return x; }, v.value);
}

}  // namespace

void write_hparams_experiment(const std::string& sweep_dir, const SweepSpec& spec,
                              const SweepState& state) {
  for (const auto& e : std::filesystem::directory_iterator(sweep_dir)) {
    if (e.path().filename().string().rfind("events.out.tfevents.", 0) == 0) return;
  }
  std::vector<io::HParamInfo> hparams;
  for (const auto& axis : spec.search.grid) hparams.push_back(info_for(axis.key, axis.values));
  for (const auto& p : spec.search.random) {
    if (p.distribution == Distribution::kChoice) {
      hparams.push_back(info_for(p.key, p.choices));
    } else {
      hparams.push_back({.name = p.key, .interval = std::make_pair(p.low, p.high)});
    }
  }
  // The metrics every trial logs: loss and the config's metrics, per epoch (val_ too with
  // validation data) and at the end on the test split.
  const config::TrainConfig base = config::load_config(spec.base_config);
  std::vector<std::string> names = {"loss"};
  names.insert(names.end(), base.loss.metrics.begin(), base.loss.metrics.end());
  const bool validation = base.data.validation_split > 0 || base.data.validate_on_test ||
                          !base.data.validation_inputs.empty() || base.data.validation_from_split;
  std::vector<io::MetricInfo> metrics;
  for (const char* prefix : {"", "val_", "test_"}) {
    if (std::string(prefix) == "val_" && !validation) continue;
    for (const auto& n : names)
      metrics.push_back({.tag = prefix + n, .group = "", .display_name = prefix + n});
  }
  io::write_hparams_experiment(sweep_dir, hparams, metrics, state.start_time);
}

void write_hparams_session(const std::string& sweep_dir, const TrialRecord& trial) {
  io::HParamsSession s;
  for (const auto& o : trial.overrides) s.hparams[o.key] = hparam_value(o.value);
  s.start_time_secs = trial.start_time;
  s.end_time_secs = trial.end_time;
  s.status = trial.status == TrialStatus::kFailed ? io::HParamsSession::Status::kFailure
                                                  : io::HParamsSession::Status::kSuccess;
  for (const auto& row : trial.history) {
    for (const auto& [tag, v] : row.values) {
      if (std::isfinite(v)) s.metrics.emplace_back(tag, row.epoch, v);
    }
  }
  for (const auto& [tag, v] : trial.test_metrics) {
    if (std::isfinite(v)) s.metrics.emplace_back(tag, trial.epochs_run(), v);
  }
  io::write_hparams_session(sweep_dir + "/trials/" + trial.name, s);
}

}  // namespace tern::sweep
