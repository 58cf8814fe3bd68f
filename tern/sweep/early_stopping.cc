// The median stopping rule and ASHA (stopping form) over reported epoch values.
#include "tern/sweep/early_stopping.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "tern/base/error.h"

namespace tern::sweep {
namespace {

std::string fmt(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.4f", v);
  return buf;
}

class NoStopping : public EarlyStopper {
 public:
  StopDecision report(int, int64_t, double) override { return {}; }
  void record(int, int64_t, double) override {}
};

class MedianStopping : public EarlyStopper {
 public:
  MedianStopping(const EarlyStoppingSpec& spec, const Objective& objective)
      : spec_(spec), objective_(objective) {}

  void record(int trial, int64_t epoch, double value) override {
    std::vector<double>& h = history_[trial];
    h.resize(static_cast<size_t>(epoch - 1), std::nan(""));  // a missing epoch counts as NaN
    h.push_back(value);
  }

  StopDecision report(int trial, int64_t epoch, double value) override {
    record(trial, epoch, value);
    if (epoch < spec_.grace_epochs) return {};
    std::vector<double> means;
    for (const auto& [other, h] : history_) {
      if (other == trial || static_cast<int64_t>(h.size()) < epoch) continue;
      double sum = 0;
      for (int64_t e = 0; e < epoch; ++e) sum += h[static_cast<size_t>(e)];
      means.push_back(sum / static_cast<double>(epoch));  // NaN if any epoch diverged
    }
    if (static_cast<int64_t>(means.size()) < spec_.min_trials) return {};
    // NaN sorts as the worst value.
    std::sort(means.begin(), means.end(),
              [&](double a, double b) { return objective_.better(a, b); });
    const size_t n = means.size();
    const double median = n % 2 ? means[n / 2] : 0.5 * (means[n / 2 - 1] + means[n / 2]);
    const std::vector<double>& mine = history_[trial];
    double best = mine[0];
    for (double v : mine) {
      if (objective_.better(v, best)) best = v;
    }
    if (std::isnan(median) || !objective_.better(median, best)) return {};
    return {true, "median rule at epoch " + std::to_string(epoch) + ": best " + fmt(best) +
                      " worse than the median " + fmt(median) + " of " + std::to_string(n) +
                      " trials"};
  }

 private:
  EarlyStoppingSpec spec_;
  Objective objective_;
  std::map<int, std::vector<double>> history_;  // trial -> value per epoch (index epoch - 1)
};

class Asha : public EarlyStopper {
 public:
  Asha(const EarlyStoppingSpec& spec, const Objective& objective, int64_t max_epochs)
      : eta_(spec.reduction_factor),
        objective_(objective),
        rungs_(asha_rungs(spec.min_epochs, spec.reduction_factor,
                          spec.max_epochs > 0 ? spec.max_epochs : max_epochs)) {}

  void record(int trial, int64_t epoch, double value) override {
    auto it = std::find(rungs_.begin(), rungs_.end(), epoch);
    if (it != rungs_.end()) recorded_[epoch][trial] = value;
  }

  StopDecision report(int trial, int64_t epoch, double value) override {
    record(trial, epoch, value);
    auto it = std::find(rungs_.begin(), rungs_.end(), epoch);
    if (it == rungs_.end()) return {};
    const std::map<int, double>& rung = recorded_[epoch];
    int64_t better = 0;
    for (const auto& [other, v] : rung) {
      if (other != trial && objective_.better(v, value)) ++better;
    }
    const int64_t n = static_cast<int64_t>(rung.size());
    const int64_t keep = std::max<int64_t>(1, static_cast<int64_t>(std::floor(n / eta_)));
    if (better < keep && !std::isnan(value)) return {};
    return {true, "asha rung " + std::to_string(it - rungs_.begin() + 1) + " (epoch " +
                      std::to_string(epoch) + "): " + fmt(value) + " not in the top " +
                      std::to_string(keep) + " of " + std::to_string(n)};
  }

 private:
  double eta_;
  Objective objective_;
  std::vector<int64_t> rungs_;
  std::map<int64_t, std::map<int, double>> recorded_;  // rung epoch -> trial -> value
};

}  // namespace

std::vector<int64_t> asha_rungs(int64_t min_epochs, double reduction_factor, int64_t max_epochs) {
  TERN_CHECK_ARG(min_epochs >= 1 && reduction_factor > 1, "asha: min_epochs ", min_epochs,
                 ", reduction_factor ", reduction_factor);
  std::vector<int64_t> rungs;
  for (double r = static_cast<double>(min_epochs); r < static_cast<double>(max_epochs);
       r *= reduction_factor) {
    const int64_t e = static_cast<int64_t>(std::llround(r));
    if (e < max_epochs && (rungs.empty() || e > rungs.back())) rungs.push_back(e);
  }
  return rungs;
}

std::unique_ptr<EarlyStopper> make_early_stopper(const EarlyStoppingSpec& spec,
                                                 const Objective& objective, int64_t max_epochs) {
  switch (spec.rule) {
    case EarlyStoppingSpec::Rule::kMedian:
      return std::make_unique<MedianStopping>(spec, objective);
    case EarlyStoppingSpec::Rule::kAsha:
      return std::make_unique<Asha>(spec, objective, max_epochs);
    default:
      return std::make_unique<NoStopping>();
  }
}

}  // namespace tern::sweep
