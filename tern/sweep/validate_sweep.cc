// validate_sweep: every trial's config loaded through config::load_config before anything runs.
#include "tern/sweep/validate_sweep.h"

#include <algorithm>
#include <filesystem>

#include "tern/config/config.h"

namespace tern::sweep {
namespace {

bool has_validation(const config::TrainConfig& cfg) {
  const config::DataConfig& d = cfg.data;
  return d.validation_split > 0 || d.validate_on_test || !d.validation_inputs.empty() ||
         d.validation_from_split;
}

void check_objective(const SweepSpec& spec, const config::TrainConfig& cfg) {
  const std::string& m = spec.objective.metric;
  std::string name = m;
  for (const char* prefix : {"val_", "test_"}) {
    if (name.rfind(prefix, 0) == 0) name = name.substr(std::string(prefix).size());
  }
  std::vector<std::string> known = {"loss"};
  known.insert(known.end(), cfg.loss.metrics.begin(), cfg.loss.metrics.end());
  if (std::find(known.begin(), known.end(), name) == known.end()) {
    std::string list;
    for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
    throw_error(ErrorCode::kInvalidArgument, spec.path, ": objective.metric '", m,
                "' is not logged by ", spec.base_config, " (its metrics: ", list,
                "; per epoch as NAME and val_NAME, at the end as test_NAME)");
  }
  if (m.rfind("val_", 0) == 0 && !has_validation(cfg)) {
    throw_error(ErrorCode::kInvalidArgument, spec.path, ": objective.metric '", m,
                "' needs validation data, and ", spec.base_config,
                " has none (set data.validation_split or data.validate_on_test)");
  }
  if (!spec.objective.per_epoch() && spec.early_stopping.rule != EarlyStoppingSpec::Rule::kNone) {
    throw_error(ErrorCode::kInvalidArgument, spec.path, ": early_stopping.rule '",
                rule_name(spec.early_stopping.rule), "' needs a per-epoch objective; '", m,
                "' is known only when a trial ends (use val_", name, " or ", name, ")");
  }
}

std::string describe(const TrialSpec& t) {
  std::string s;
  for (const auto& o : t.overrides) s += (s.empty() ? "" : ", ") + o.key + "=" + o.value.toml;
  return s;
}

}  // namespace

int mpirun_slots(const std::vector<std::string>& hosts) {
  int total = 0;
  for (const auto& h : hosts) {
    size_t colon = h.find(':');
    int slots = 1;
    if (colon != std::string::npos) {
      const std::string n = h.substr(colon + 1);
      TERN_CHECK_ARG(
          !n.empty() && n.size() < 6 && n.find_first_not_of("0123456789") == std::string::npos,
          "launcher.hosts: '", h, "' is not host or host:slots");
      slots = std::stoi(n);
    }
    TERN_CHECK_ARG(colon != 0 && !h.empty() && slots >= 1, "launcher.hosts: '", h,
                   "' is not host or host:slots");
    total += slots;
  }
  return total;
}

SweepPlan validate_sweep(const SweepSpec& spec, int cores) {
  SweepPlan plan;
  plan.trials = expand_trials(spec);
  const int n = static_cast<int>(plan.trials.size());
  if (n == 0)
    throw_error(ErrorCode::kInvalidArgument, spec.path, ": the search space has no trials");
  if (spec.parallel > n) {
    throw_error(ErrorCode::kInvalidArgument, spec.path, ": parallel ", spec.parallel,
                " is more than the ", n, " trial", n == 1 ? "" : "s", " of the sweep");
  }
  plan.parallel = spec.parallel;
  if (spec.launcher.kind == LauncherSpec::Kind::kMpirun) {
    int slots = 0;
    try {
      slots = mpirun_slots(spec.launcher.hosts);
    } catch (const Error& e) {
      throw_error(ErrorCode::kInvalidArgument, spec.path, ": ", e.message());
    }
    if (spec.parallel > slots) {
      throw_error(ErrorCode::kInvalidArgument, spec.path, ": parallel ", spec.parallel,
                  " is more than the ", slots, " slots of launcher.hosts");
    }
  }
  plan.threads_per_trial =
      spec.threads_per_trial > 0 ? spec.threads_per_trial : std::max(1, cores / spec.parallel);

  // The sweep sets these itself (training.epochs only when [budget] max_epochs is given).
  std::vector<std::string> own = {"training.threads", "output.dir", "callbacks.csv_logger.path"};
  if (spec.budget.max_epochs > 0) own.push_back("training.epochs");
  std::vector<Override> keys = plan.trials.front().overrides;
  keys.insert(keys.end(), spec.fixed.begin(), spec.fixed.end());
  for (const auto& o : keys) {
    if (std::find(own.begin(), own.end(), o.key) != own.end()) {
      throw_error(ErrorCode::kInvalidArgument, spec.path, ": '", o.key,
                  "' is set by the sweep itself (",
                  o.key == "training.epochs" ? "budget.max_epochs" : "per trial",
                  "); leave it out of [grid], [random] and [set]");
    }
  }
  const config::TrainConfig base = config::load_config(spec.base_config);
  plan.base_keys = base.effective;
  plan.epochs = spec.budget.max_epochs > 0 ? spec.budget.max_epochs : base.training.fit.epochs;
  check_objective(spec, base);
  const EarlyStoppingSpec& es = spec.early_stopping;
  if (es.rule == EarlyStoppingSpec::Rule::kAsha) {
    const int64_t max_epochs = es.max_epochs > 0 ? es.max_epochs : plan.epochs;
    if (es.min_epochs >= max_epochs) {
      throw_error(ErrorCode::kInvalidArgument, spec.path, ": early_stopping.min_epochs ",
                  es.min_epochs, " leaves no rung below max_epochs ", max_epochs);
    }
  }
  // Every trial's --set list as the child will get it, with a stand-in output folder (load_config
  // reads the path as a string; nothing is created there).
  const std::string dir = std::filesystem::absolute("sweep-validation").string();
  for (const TrialSpec& t : plan.trials) {
    TrialEnv env{.dir = dir,
                 .threads = plan.threads_per_trial,
                 .epochs = plan.epochs,
                 .base_keys = plan.base_keys};
    try {
      const config::TrainConfig cfg =
          config::load_config(spec.base_config, trial_overrides(spec, t, env));
      plan.epochs = std::max<int64_t>(plan.epochs, cfg.training.fit.epochs);  // searched epochs
    } catch (const Error& e) {
      throw_error(ErrorCode::kInvalidArgument, spec.path, ": trial ", t.id, " (", describe(t),
                  "): ", e.message());
    }
  }
  return plan;
}

}  // namespace tern::sweep
