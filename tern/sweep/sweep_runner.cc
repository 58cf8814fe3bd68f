// The sweep driver: one loop that starts trials, follows their CSV logs, applies early
// stopping, and records everything in the state file.
#include "tern/sweep/sweep_runner.h"

#include <unistd.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <thread>

#include "tern/base/error.h"
#include "tern/config/config.h"
#include "tern/io/atomic_file.h"
#include "tern/sweep/early_stopping.h"
#include "tern/sweep/hparams_log.h"
#include "tern/sweep/launcher.h"
#include "tern/sweep/live_view.h"
#include "tern/sweep/results.h"
#include "tern/sweep/validate_sweep.h"
#include "tern/train/checkpoint.h"

namespace tern::sweep {
namespace {

namespace fs = std::filesystem;

double unix_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// The last non-empty line of a trial's log: usually the error that ended it.
std::string last_log_line(const std::string& path) {
  std::ifstream in(path);
  std::string line, last;
  while (std::getline(in, line)) {
    if (line.find_first_not_of(" \t\r") != std::string::npos) last = line;
  }
  return last.size() > 300 ? last.substr(0, 300) + "..." : last;
}

class Runner {
 public:
  Runner(const SweepSpec& spec, const RunOptions& options)
      : spec_(spec), opt_(options), view_(*options.out, options.terminal) {}

  SweepState run() {
    prepare();
    loop();
    finish();
    return state_;
  }

 private:
  std::string trial_dir(const TrialRecord& t) const { return dir_ + "/trials/" + t.name; }

  void prepare() {
    const int cores = opt_.cores > 0
                          ? opt_.cores
                          : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    plan_ = validate_sweep(spec_, cores);
    dir_ = fs::absolute(sweep_dir(spec_, opt_)).lexically_normal().string();
    const bool exists = fs::exists(state_path(dir_));
    if (exists && !opt_.resume) {
      throw_error(ErrorCode::kFailedPrecondition, "'", dir_,
                  "' holds a sweep already: --resume continues it, --out picks another folder");
    }
    if (exists) {
      resume_state();
    } else {
      new_state();
    }
    stopper_ = make_early_stopper(spec_.early_stopping, spec_.objective, plan_.epochs);
    for (auto& t : state_.trials) {
      if (!t.finished()) continue;
      for (const auto& row : t.history) stopper_->record(t.id, row.epoch, objective(row));
    }
    launcher_ = make_launcher(spec_.launcher, plan_.parallel, plan_.threads_per_trial, dir_);
    save_state(dir_, state_);
    write_hparams_experiment(dir_, spec_, state_);
    *opt_.out << "tern sweep " << spec_.path << ": " << state_.trials.size() << " trials of "
              << spec_.base_config << " (" << plan_.epochs << " epochs each), " << plan_.parallel
              << " at once, " << plan_.threads_per_trial << " thread"
              << (plan_.threads_per_trial == 1 ? "" : "s") << " each, early stopping "
              << state_.rule << ", launcher " << launcher_->name() << "\n  -> " << dir_ << "\n";
  }

  void new_state() {
    state_.sweep_file = spec_.path;
    state_.base_config = fs::absolute(spec_.base_config).lexically_normal().string();
    state_.objective = spec_.objective;
    state_.rule = rule_name(spec_.early_stopping.rule);
    state_.epochs = plan_.epochs;
    state_.start_time = unix_now();
    for (const auto& t : plan_.trials.front().overrides) state_.hparams.push_back(t.key);
    for (const auto& t : plan_.trials) {
      TrialRecord r{.id = t.id, .name = trial_name(t.id), .overrides = t.overrides};
      state_.trials.push_back(std::move(r));
    }
    fs::create_directories(dir_ + "/trials");
  }

  void resume_state() {
    state_ = load_state(dir_);
    bool same = state_.trials.size() == plan_.trials.size();
    for (size_t i = 0; same && i < plan_.trials.size(); ++i) {
      same = state_.trials[i].overrides == plan_.trials[i].overrides;
    }
    if (!same) {
      throw_error(ErrorCode::kFailedPrecondition, "--resume: the trials in ", state_path(dir_),
                  " differ from those of ", spec_.path, " (the sweep file changed)");
    }
    std::unique_ptr<Launcher> old = make_launcher(spec_.launcher, 1, 1, dir_);
    int kept = 0, restarted = 0;
    for (auto& t : state_.trials) {
      if (t.finished()) {
        ++kept;
        continue;
      }
      if (!t.job.empty()) old->stop_leftover(t.job, trial_dir(t));
      const bool from_checkpoint = spec_.checkpoints &&
                                   fs::exists(trial_checkpoint_dir(trial_dir(t))) &&
                                   train::latest_checkpoint(trial_checkpoint_dir(trial_dir(t)));
      if (!from_checkpoint) fs::remove_all(trial_dir(t));
      restarted += t.status == TrialStatus::kRunning;
      t.status = TrialStatus::kPending;
      t.history.clear();  // read again from its CSV log
      t.reason.clear();
    }
    *opt_.out << "--resume: " << kept << " finished trials kept, " << restarted
              << " interrupted trials restart (from their last checkpoint when they have one)\n";
  }

  double objective(const EpochRow& row) const {
    auto it = row.values.find(spec_.objective.metric);
    return it == row.values.end() ? std::nan("") : it->second;
  }

  TrialLaunch launch_for(TrialRecord& t) {
    const std::string dir = trial_dir(t);
    fs::create_directories(dir);
    if (t.sets.empty()) {
      TrialSpec spec{.id = t.id, .overrides = t.overrides};
      t.sets = trial_overrides(spec_, spec,
                               {.dir = dir,
                                .threads = plan_.threads_per_trial,
                                .epochs = plan_.epochs,
                                .base_keys = plan_.base_keys});
    }
    io::write_file_atomically(dir + "/config.toml",
                              config::render_config(state_.base_config, t.sets));
    fs::remove(dir + "/metrics.json");
    TrialLaunch l{.id = t.id,
                  .dir = dir,
                  .argv = {opt_.tern_binary, "train", state_.base_config, "--metrics-json",
                           dir + "/metrics.json"}};
    for (const auto& s : t.sets) l.argv.insert(l.argv.end(), {"--set", s});
    if (spec_.checkpoints && fs::exists(trial_checkpoint_dir(dir)) &&
        train::latest_checkpoint(trial_checkpoint_dir(dir))) {
      l.argv.push_back("--resume");
    }
    logs_.emplace(t.id, EpochLog(trial_csv_path(dir)));
    ++t.attempts;
    active_.push_back(t.id);
    return l;
  }

  void start_trials() {
    std::vector<TrialLaunch> batch;
    const bool queues = launcher_->queues();
    for (int id : launch_order(spec_, static_cast<int>(state_.trials.size()))) {
      TrialRecord& t = state_.trials[static_cast<size_t>(id)];
      if (t.status != TrialStatus::kPending || launched(t.id)) continue;
      if (!queues && static_cast<int>(active_.size()) >= plan_.parallel) break;
      batch.push_back(launch_for(t));
      if (!queues) {
        launcher_->start(batch);
        t.job = launcher_->job_ref(t.id);
        batch.clear();
      }
    }
    if (!batch.empty()) {
      launcher_->start(batch);
      for (const auto& l : batch)
        state_.trials[static_cast<size_t>(l.id)].job = launcher_->job_ref(l.id);
    }
  }

  bool launched(int id) const {
    return std::find(active_.begin(), active_.end(), id) != active_.end();
  }

  void read_rows(TrialRecord& t, double now) {
    auto it = logs_.find(t.id);
    if (it == logs_.end()) return;
    for (const EpochRow& row : it->second.poll()) {
      t.add_row(row);
      view_.epoch(t, state_, now);
      if (stopping_.count(t.id)) continue;
      StopDecision d = stopper_->report(t.id, row.epoch, objective(row));
      if (!d.stop) continue;
      launcher_->stop(t.id);
      stopping_[t.id] = d.reason;
    }
  }

  void poll_trial(TrialRecord& t, double now) {
    TrialPoll p = launcher_->poll(t.id);
    if (p.state == TrialPoll::State::kQueued) return;
    if (t.status == TrialStatus::kPending) {
      t.status = TrialStatus::kRunning;
      // The launcher's own start time where it has one: a Slurm task first seen already finished
      // (a short trial between two polls of a busy queue) kept a span of 0 s before.
      t.start_time = p.started_at > 0 ? std::min(p.started_at, now) : now;
      view_.event(t.name + " started (" + t.job + ")", state_, now);
      dirty_ = true;
    }
    const size_t rows = t.history.size();
    read_rows(t, now);
    dirty_ |= rows != t.history.size();
    if (p.state != TrialPoll::State::kExited) return;
    auto stop = stopping_.find(t.id);
    if (p.exit_code == 0) {
      finish_trial(t, TrialStatus::kDone, "", now);
    } else if (stop != stopping_.end()) {
      finish_trial(t, TrialStatus::kStopped, stop->second, now);
    } else {
      std::string why = p.detail;
      const std::string last = last_log_line(trial_dir(t) + "/train.log");
      if (!last.empty()) why += ": " + last;
      finish_trial(t, TrialStatus::kFailed, why, now);
    }
  }

  void finish_trial(TrialRecord& t, TrialStatus status, std::string reason, double now) {
    t.status = status;
    t.reason = reason;
    t.end_time = now;
    t.wall_seconds += now - t.start_time;
    active_.erase(std::find(active_.begin(), active_.end(), t.id));
    logs_.erase(t.id);
    stopping_.erase(t.id);
    if (status == TrialStatus::kDone) read_test_metrics(t);
    try {
      write_hparams_session(dir_, t);
    } catch (const Error& e) {
      *opt_.out << "tern sweep: " << t.name << ": HParams session not written: " << e.message()
                << "\n";
    }
    char buf[64];
    std::snprintf(buf, sizeof(buf), " %.4f after %lld epochs, %.1f s",
                  t.final_metric(spec_.objective), static_cast<long long>(t.epochs_run()),
                  now - t.start_time);
    std::string line = t.name + " " + status_name(status) + ": " + spec_.objective.metric + buf;
    if (!reason.empty()) line += " (" + reason + ")";
    view_.event(line, state_, now);
    dirty_ = true;
  }

  void read_test_metrics(TrialRecord& t) {
    try {
      nlohmann::json j = nlohmann::json::parse(io::read_file(trial_dir(t) + "/metrics.json"));
      for (const auto& [k, v] : j.items()) {
        if (k.rfind("test_", 0) == 0 && v.is_number()) t.test_metrics[k] = v.get<double>();
      }
    } catch (const std::exception&) {
      // a done trial without metrics.json keeps its per-epoch results
    }
  }

  void loop() {
    const double begin = unix_now();
    bool out_of_time = false;
    for (;;) {
      const double now = unix_now();
      if (!out_of_time && spec_.budget.max_seconds > 0 && now - begin > spec_.budget.max_seconds) {
        out_of_time = true;
        view_.event("tern sweep: the time budget (" + format_duration(spec_.budget.max_seconds) +
                        ") is spent: stopping the running trials, starting no more",
                    state_, now);
        for (int id : active_) {
          launcher_->stop(id);
          stopping_[id] = "time budget";
        }
      }
      if (!out_of_time) start_trials();
      for (int id : std::vector<int>(active_))
        poll_trial(state_.trials[static_cast<size_t>(id)], now);
      if (dirty_) {
        save_state(dir_, state_);
        dirty_ = false;
      }
      if (active_.empty()) {
        bool pending = false;
        for (const auto& t : state_.trials) pending |= t.status == TrialStatus::kPending;
        if (!pending || out_of_time) break;
      }
      view_.update(state_, now);
      std::this_thread::sleep_for(std::chrono::duration<double>(opt_.poll_seconds));
    }
  }

  void finish() {
    view_.finish();
    save_state(dir_, state_);
    write_results(dir_, state_);
    const std::string best = write_best_config(dir_, state_);
    std::ostream& os = *opt_.out;
    os << "\n" << results_table(state_) << "\n";
    int64_t epochs = 0;
    for (const auto& t : state_.trials) epochs += t.epochs_run();
    os << "epochs run: " << epochs << " of "
       << plan_.epochs * static_cast<int64_t>(state_.trials.size()) << "; results: " << dir_
       << "/results.csv";
    if (!best.empty()) os << "; best config: " << best;
    os << "\n";
  }

  const SweepSpec& spec_;
  RunOptions opt_;
  LiveView view_;
  SweepPlan plan_;
  std::string dir_;
  SweepState state_;
  std::unique_ptr<Launcher> launcher_;
  std::unique_ptr<EarlyStopper> stopper_;
  std::map<int, EpochLog> logs_;
  std::map<int, std::string> stopping_;  // trial -> why it is being stopped
  std::vector<int> active_;              // handed to the launcher, not finished
  bool dirty_ = false;
};

}  // namespace

std::string sweep_dir(const SweepSpec& spec, const RunOptions& options) {
  if (!options.out_dir.empty()) return options.out_dir;
  if (!spec.out_dir.empty()) return spec.out_dir;
  return "runs/sweeps/" + fs::path(spec.path).stem().string();
}

SweepState run_sweep(const SweepSpec& spec, const RunOptions& options) {
  Runner runner(spec, options);
  return runner.run();
}

}  // namespace tern::sweep
