// LiveView: ANSI redraw on a terminal, plain lines elsewhere.
#include "tern/sweep/live_view.h"

#include <cmath>
#include <cstdio>

#include "tern/sweep/results.h"

namespace tern::sweep {

std::string format_duration(double s) {
  if (!(s >= 0) || !std::isfinite(s)) return "?";
  char buf[32];
  const long t = std::lround(s);
  if (t < 60) {
    std::snprintf(buf, sizeof(buf), "%lds", t);
  } else if (t < 3600) {
    std::snprintf(buf, sizeof(buf), "%ldm%02lds", t / 60, t % 60);
  } else {
    std::snprintf(buf, sizeof(buf), "%ldh%02ldm", t / 3600, (t % 3600) / 60);
  }
  return buf;
}

std::string LiveView::counts(const SweepState& state, double now) {
  int n[5] = {0, 0, 0, 0, 0};
  for (const auto& t : state.trials) ++n[static_cast<int>(t.status)];
  char buf[160];
  std::snprintf(
      buf, sizeof(buf), "done %d | running %d | stopped %d | failed %d | pending %d | %s",
      n[static_cast<int>(TrialStatus::kDone)], n[static_cast<int>(TrialStatus::kRunning)],
      n[static_cast<int>(TrialStatus::kStopped)], n[static_cast<int>(TrialStatus::kFailed)],
      n[static_cast<int>(TrialStatus::kPending)], format_duration(now - state.start_time).c_str());
  return buf;
}

std::string LiveView::trial_line(const TrialRecord& t, const SweepState& state, double now) {
  std::string line = t.name + " ";
  for (const auto& o : t.overrides) line += " " + short_key(o.key) + "=" + format_param(o.value);
  const int64_t done = t.epochs_run();
  char buf[160];
  if (t.start_time <= 0) return line + "  queued";
  const double elapsed = now - t.start_time;
  if (done == 0) {
    std::snprintf(buf, sizeof(buf), "  epoch 0/%lld  starting (%s)",
                  static_cast<long long>(state.epochs), format_duration(elapsed).c_str());
    return line + buf;
  }
  const double eta = elapsed / static_cast<double>(done) * static_cast<double>(state.epochs - done);
  std::snprintf(buf, sizeof(buf), "  epoch %lld/%lld  %s %.4f  ETA %s",
                static_cast<long long>(done), static_cast<long long>(state.epochs),
                state.objective.metric.c_str(), t.final_metric(state.objective),
                format_duration(eta).c_str());
  return line + buf;
}

void LiveView::clear() {
  if (!terminal_ || drawn_lines_ == 0) return;
  os_ << "\x1b[" << drawn_lines_ << "F\x1b[J";  // up to the block's first line, clear below
  drawn_lines_ = 0;
}

void LiveView::event(const std::string& line, const SweepState& state, double now) {
  clear();
  os_ << line << "\n";
  if (terminal_) {
    update(state, now, /*force=*/true);
  } else {
    os_.flush();
  }
}

void LiveView::epoch(const TrialRecord& trial, const SweepState& state, double now) {
  if (terminal_) {
    update(state, now);
    return;
  }
  os_ << trial_line(trial, state, now) << "\n";
  update(state, now);
}

void LiveView::update(const SweepState& state, double now, bool force) {
  if (!terminal_) {
    std::string c = counts(state, now);
    const std::string key = c.substr(0, c.rfind('|'));  // the counts without the clock
    if (key != last_counts_) {
      last_counts_ = key;
      os_ << c << "\n";
    }
    os_.flush();
    return;
  }
  if (!force && now - last_draw_ < 0.2) return;
  last_draw_ = now;
  clear();
  for (const auto& t : state.trials) {
    if (t.status != TrialStatus::kRunning) continue;
    os_ << "  " << trial_line(t, state, now) << "\x1b[K\n";
    ++drawn_lines_;
  }
  os_ << counts(state, now) << "\x1b[K\n";
  ++drawn_lines_;
  os_.flush();
}

void LiveView::finish() {
  clear();
  os_.flush();
}

}  // namespace tern::sweep
