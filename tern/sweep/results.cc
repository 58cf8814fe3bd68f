// Results files, the ranked table and best.toml.
#include "tern/sweep/results.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "tern/config/config.h"
#include "tern/io/atomic_file.h"
#include "tern/sweep/trials.h"

namespace tern::sweep {
namespace {

int status_rank(TrialStatus s) {
  switch (s) {
    case TrialStatus::kDone:
      return 0;
    case TrialStatus::kStopped:
      return 1;
    case TrialStatus::kFailed:
      return 2;
    case TrialStatus::kRunning:
      return 3;
    default:
      return 4;
  }
}

std::string fmt(double v, const char* f = "%.4f") {
  if (std::isnan(v)) return "nan";
  char buf[48];
  std::snprintf(buf, sizeof(buf), f, v);
  return buf;
}

std::string csv_cell(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

std::string value_of(const TrialRecord& t, const std::string& key) {
  for (const auto& o : t.overrides) {
    if (o.key == key) return format_param(o.value);
  }
  return "";
}

std::set<std::string> test_keys(const SweepState& s) {
  std::set<std::string> keys;
  for (const auto& t : s.trials) {
    for (const auto& [k, v] : t.test_metrics) keys.insert(k);
  }
  return keys;
}

nlohmann::json json_number(double v) {
  return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr);
}

// Keys only the sweep sets for its own bookkeeping (left out of best.toml).
bool sweep_only(const std::string& set) {
  for (const char* prefix : {"training.threads=", "output.dir=", "callbacks.csv_logger.",
                             "callbacks.checkpoint.", "callbacks.tensorboard.log_dir=",
                             "callbacks.backup_and_restore.dir=", "callbacks.profiler.trace="}) {
    if (set.rfind(prefix, 0) == 0) return true;
  }
  return false;
}

}  // namespace

std::string short_key(const std::string& key) {
  size_t dot = key.rfind('.');
  return dot == std::string::npos ? key : key.substr(dot + 1);
}

std::vector<const TrialRecord*> rank_trials(const SweepState& state) {
  std::vector<const TrialRecord*> out;
  for (const auto& t : state.trials) out.push_back(&t);
  const Objective& o = state.objective;
  std::stable_sort(out.begin(), out.end(), [&](const TrialRecord* a, const TrialRecord* b) {
    if (status_rank(a->status) != status_rank(b->status))
      return status_rank(a->status) < status_rank(b->status);
    const double fa = a->final_metric(o), fb = b->final_metric(o);
    if (o.better(fa, fb)) return true;
    if (o.better(fb, fa)) return false;
    return a->id < b->id;
  });
  return out;
}

std::string results_table(const SweepState& state, size_t max_rows) {
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> header = {"rank", "trial", "status"};
  for (const auto& k : state.hparams) header.push_back(short_key(k));
  header.insert(header.end(), {state.objective.metric, "best", "epochs", "wall_s"});
  rows.push_back(header);
  int rank = 0;
  for (const TrialRecord* t : rank_trials(state)) {
    if (max_rows && rows.size() > max_rows) break;
    std::vector<std::string> r = {std::to_string(++rank), t->name, status_name(t->status)};
    for (const auto& k : state.hparams) r.push_back(value_of(*t, k));
    r.insert(r.end(), {fmt(t->final_metric(state.objective)), fmt(t->best_metric(state.objective)),
                       std::to_string(t->epochs_run()), fmt(t->wall_seconds, "%.1f")});
    rows.push_back(r);
  }
  std::vector<size_t> width(header.size(), 0);
  for (const auto& r : rows) {
    for (size_t i = 0; i < r.size(); ++i) width[i] = std::max(width[i], r[i].size());
  }
  std::ostringstream os;
  for (const auto& r : rows) {
    for (size_t i = 0; i < r.size(); ++i) {
      os << (i ? "  " : "") << r[i]
         << std::string(i + 1 < r.size() ? width[i] - r[i].size() : 0, ' ');
    }
    os << "\n";
  }
  return os.str();
}

void write_results(const std::string& dir, const SweepState& state) {
  const Objective& o = state.objective;
  const std::set<std::string> tests = test_keys(state);
  std::ostringstream csv;
  csv << "rank,trial,status";
  for (const auto& k : state.hparams) csv << "," << csv_cell(k);
  csv << ",final_" << o.metric << ",best_" << o.metric;
  for (const auto& k : tests) csv << "," << k;
  csv << ",epochs,wall_seconds,start_time,end_time,attempts,reason\n";
  nlohmann::ordered_json trials = nlohmann::ordered_json::array();
  int rank = 0;
  for (const TrialRecord* t : rank_trials(state)) {
    ++rank;
    csv << rank << "," << t->name << "," << status_name(t->status);
    nlohmann::ordered_json overrides = nlohmann::ordered_json::object();
    for (const auto& k : state.hparams) {
      csv << "," << csv_cell(value_of(*t, k));
      for (const auto& ov : t->overrides) {
        if (ov.key == k) std::visit([&](const auto& v) { overrides[k] = v; }, ov.value.value);
      }
    }
    csv << "," << fmt(t->final_metric(o), "%.6g") << "," << fmt(t->best_metric(o), "%.6g");
    nlohmann::ordered_json test = nlohmann::ordered_json::object();
    for (const auto& k : tests) {
      auto it = t->test_metrics.find(k);
      csv << "," << (it == t->test_metrics.end() ? "" : fmt(it->second, "%.6g"));
      if (it != t->test_metrics.end()) test[k] = json_number(it->second);
    }
    csv << "," << t->epochs_run() << "," << fmt(t->wall_seconds, "%.3f") << ","
        << fmt(t->start_time, "%.3f") << "," << fmt(t->end_time, "%.3f") << "," << t->attempts
        << "," << csv_cell(t->reason) << "\n";
    trials.push_back({{"rank", rank},
                      {"trial", t->name},
                      {"status", status_name(t->status)},
                      {"overrides", overrides},
                      {"final_metric", json_number(t->final_metric(o))},
                      {"best_metric", json_number(t->best_metric(o))},
                      {"test_metrics", test},
                      {"epochs", t->epochs_run()},
                      {"wall_seconds", t->wall_seconds},
                      {"start_time", t->start_time},
                      {"end_time", t->end_time},
                      {"attempts", t->attempts},
                      {"reason", t->reason}});
  }
  nlohmann::ordered_json j;
  j["sweep_file"] = state.sweep_file;
  j["base_config"] = state.base_config;
  j["objective"] = {{"metric", o.metric},
                    {"mode", o.mode == Objective::Mode::kMax ? "max" : "min"}};
  j["early_stopping"] = state.rule;
  j["epochs_per_trial"] = state.epochs;
  int64_t total_epochs = 0;
  for (const auto& t : state.trials) total_epochs += t.epochs_run();
  j["total_epochs"] = total_epochs;
  j["trials"] = trials;
  io::write_file_atomically(dir + "/results.csv", csv.str());
  io::write_file_atomically(dir + "/results.json", j.dump(2) + "\n");
}

std::string write_best_config(const std::string& dir, const SweepState& state) {
  std::vector<const TrialRecord*> ranked = rank_trials(state);
  if (ranked.empty() || status_rank(ranked[0]->status) > 1 ||
      std::isnan(ranked[0]->final_metric(state.objective)))
    return "";
  const TrialRecord& best = *ranked[0];
  std::vector<std::string> sets;
  for (const auto& s : best.sets) {
    if (!sweep_only(s)) sets.push_back(s);
  }
  sets.push_back("output.dir=" + toml_string(dir + "/best"));
  std::ostringstream os;
  os << "# tern sweep: the best trial (" << best.name << ", " << status_name(best.status) << ") of "
     << state.sweep_file << ": " << state.objective.metric << " "
     << fmt(best.final_metric(state.objective), "%.6g") << " after " << best.epochs_run()
     << " epochs.\n# " << state.base_config << " with:";
  for (const auto& s : sets) os << " --set " << s;
  os << "\n\n" << config::render_config(state.base_config, sets);
  const std::string path = dir + "/best.toml";
  io::write_file_atomically(path, os.str());
  return path;
}

}  // namespace tern::sweep
