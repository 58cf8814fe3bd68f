// Trials: the search space expanded, and each trial's --set list.
#include "tern/sweep/trials.h"

#include <cmath>
#include <cstdio>

#include "tern/base/error.h"
#include "tern/base/philox.h"

namespace tern::sweep {
namespace {

// A sampled number kept to 5 significant digits: readable in tables, exact in TOML.
double round_significant(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.5g", v);
  return std::strtod(buf, nullptr);
}

ParamValue sample(const RandomParam& p, PhiloxStream& rng) {
  switch (p.distribution) {
    case Distribution::kChoice:
      return p.choices[rng.next_below(p.choices.size())];
    case Distribution::kUniform:
      return number_param(round_significant(p.low + rng.next_double() * (p.high - p.low)));
    case Distribution::kLogUniform: {
      const double lo = std::log(p.low), hi = std::log(p.high);
      return number_param(round_significant(std::exp(lo + rng.next_double() * (hi - lo))));
    }
  }
  return {};
}

// Callback tables whose file or folder key the base config may set explicitly.
const std::pair<const char*, const char*> kCallbackPaths[] = {
    {"callbacks.tensorboard.log_dir", "logs"},
    {"callbacks.backup_and_restore.dir", "backup"},
    {"callbacks.profiler.trace", "trace.json"},
};

}  // namespace

std::vector<TrialSpec> expand_trials(const SweepSpec& spec) {
  std::vector<TrialSpec> trials;
  const int64_t cap = spec.budget.max_trials > 0 ? spec.budget.max_trials : INT64_MAX;
  if (spec.search.method == SearchSpace::Method::kGrid) {
    const auto& axes = spec.search.grid;
    std::vector<size_t> at(axes.size(), 0);
    while (static_cast<int64_t>(trials.size()) < cap) {
      TrialSpec t{.id = static_cast<int>(trials.size())};
      for (size_t a = 0; a < axes.size(); ++a)
        t.overrides.push_back({axes[a].key, axes[a].values[at[a]]});
      trials.push_back(std::move(t));
      size_t a = axes.size();  // odometer: the last axis turns fastest
      while (a > 0 && ++at[a - 1] == axes[a - 1].values.size()) at[--a] = 0;
      if (a == 0) break;
    }
    return trials;
  }
  PhiloxStream rng(spec.search.seed);
  const int64_t n = std::min<int64_t>(spec.search.random_trials, cap);
  for (int64_t i = 0; i < n; ++i) {
    TrialSpec t{.id = static_cast<int>(i)};
    for (const auto& p : spec.search.random) t.overrides.push_back({p.key, sample(p, rng)});
    trials.push_back(std::move(t));
  }
  return trials;
}

std::vector<int> launch_order(const SweepSpec& spec, int trials) {
  std::vector<int> order(static_cast<size_t>(trials));
  for (int i = 0; i < trials; ++i) order[static_cast<size_t>(i)] = i;
  if (!spec.shuffled_order) return order;
  PhiloxStream rng(spec.search.seed, /*stream=*/1);
  for (size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[rng.next_below(i)]);
  return order;
}

std::string trial_name(int id) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "trial_%03d", id);
  return buf;
}

std::string toml_string(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

std::string trial_csv_path(const std::string& trial_dir) {
  return trial_dir + "/training.csv";
}
std::string trial_checkpoint_dir(const std::string& trial_dir) {
  return trial_dir + "/checkpoints";
}

std::vector<std::string> trial_overrides(const SweepSpec& spec, const TrialSpec& trial,
                                         const TrialEnv& env) {
  TERN_CHECK_ARG(!env.dir.empty(), "trial_overrides: the trial folder is empty");
  std::vector<std::string> out;
  if (env.epochs > 0) out.push_back("training.epochs=" + std::to_string(env.epochs));
  for (const auto& o : spec.fixed) out.push_back(o.key + "=" + o.value.toml);
  for (const auto& o : trial.overrides) out.push_back(o.key + "=" + o.value.toml);
  out.push_back("training.threads=" + std::to_string(env.threads));
  out.push_back("output.dir=" + toml_string(env.dir));
  out.push_back("callbacks.csv_logger.path=" + toml_string(trial_csv_path(env.dir)));
  out.push_back("callbacks.csv_logger.append=true");
  if (spec.checkpoints) {
    out.push_back("callbacks.checkpoint.dir=" + toml_string(trial_checkpoint_dir(env.dir)));
    out.push_back("callbacks.checkpoint.save_freq=\"epoch\"");
    out.push_back("callbacks.checkpoint.keep_last=1");
  } else if (env.base_keys.count("callbacks.checkpoint.dir")) {
    out.push_back("callbacks.checkpoint.dir=" + toml_string(trial_checkpoint_dir(env.dir)));
  }
  for (const auto& [key, name] : kCallbackPaths) {
    if (env.base_keys.count(key))
      out.push_back(std::string(key) + "=" + toml_string(env.dir + "/" + name));
  }
  return out;
}

}  // namespace tern::sweep
