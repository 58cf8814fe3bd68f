// draw_sweep_plot: scatter panels per hyperparameter and the learning curves of the top trials.
#include "tern/sweep/plot.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>

#include "tern/base/error.h"
#include "tern/data/image_codec.h"
#include "tern/sweep/results.h"

namespace tern::sweep {
namespace {

constexpr Rgb kWhite{255, 255, 255}, kAxis{60, 60, 60}, kGrid{225, 225, 225}, kText{30, 30, 30};
constexpr Rgb kCurveColors[] = {{31, 119, 180},  {214, 39, 40},  {44, 160, 44},
                                {148, 103, 189}, {255, 127, 14}, {23, 190, 207}};
constexpr int kLeft = 62, kRight = 16, kTop = 34, kBottom = 42;

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.3g", v);
  return buf;
}

// A linear or log axis from data values to pixels.
struct Axis {
  double lo = 0, hi = 1;
  bool log = false;
  int p0 = 0, p1 = 1;  // pixel of lo, of hi
  double t(double v) const { return log ? std::log10(v) : v; }
  int map(double v) const {
    const double a = t(lo), b = t(hi);
    const double f = b > a ? (t(v) - a) / (b - a) : 0.5;
    return p0 + static_cast<int>(std::lround(f * (p1 - p0)));
  }
};

Axis fit_axis(std::vector<double> v, int p0, int p1, bool allow_log) {
  Axis a{.p0 = p0, .p1 = p1};
  auto [mn, mx] = std::minmax_element(v.begin(), v.end());
  a.lo = *mn;
  a.hi = *mx;
  a.log = allow_log && a.lo > 0 && a.hi / a.lo >= 20;
  if (a.log) {
    a.lo /= 1.25;
    a.hi *= 1.25;
    return a;
  }
  double pad = (a.hi - a.lo) * 0.06;
  if (pad == 0) pad = a.lo == 0 ? 0.5 : std::abs(a.lo) * 0.1;
  a.lo -= pad;
  a.hi += pad;
  return a;
}

void frame(Canvas& c, int x, int y, const std::string& title, const std::string& ylabel) {
  c.text(x + kLeft, y + 8, title, kText, 1);
  c.text(x + 4, y + 22, ylabel, kText, 1);
  c.line(x + kLeft, y + kTop, x + kLeft, y + kPlotPanelHeight - kBottom, kAxis);
  c.line(x + kLeft, y + kPlotPanelHeight - kBottom, x + kPlotPanelWidth - kRight,
         y + kPlotPanelHeight - kBottom, kAxis);
}

void y_ticks(Canvas& c, int x, const Axis& ya) {
  for (int i = 0; i <= 4; ++i) {
    const double v = ya.lo + (ya.hi - ya.lo) * (0.04 + 0.92 * i / 4.0);
    const int py = ya.map(v);
    c.line(x + kLeft + 1, py, x + kPlotPanelWidth - kRight, py, kGrid);
    c.line(x + kLeft - 4, py, x + kLeft, py, kAxis);
    const std::string s = num(v);
    c.text(x + kLeft - 6 - Canvas::text_width(s), py - 3, s, kText);
  }
}

void x_tick(Canvas& c, int px, int y0, const std::string& label) {
  c.line(px, y0, px, y0 + 4, kAxis);
  std::string s = label.size() > 9 ? label.substr(0, 8) + "." : label;
  c.text(px - Canvas::text_width(s) / 2, y0 + 8, s, kText);
}

struct Point {
  const TrialRecord* trial;
  double value;
};

void scatter_panel(Canvas& c, int x, int y, const SweepState& s, const std::string& key) {
  const Objective& o = s.objective;
  std::vector<Point> pts;
  bool numeric = true;
  std::vector<std::string> categories;
  for (const auto& t : s.trials) {
    if (t.status != TrialStatus::kDone && t.status != TrialStatus::kStopped) continue;
    if (!std::isfinite(t.final_metric(o))) continue;
    for (const auto& ov : t.overrides) {
      if (ov.key != key) continue;
      pts.push_back({&t, t.final_metric(o)});
      numeric &= std::holds_alternative<double>(ov.value.value);
      const std::string label = format_param(ov.value);
      if (std::find(categories.begin(), categories.end(), label) == categories.end())
        categories.push_back(label);
    }
  }
  frame(c, x, y, short_key(key), o.metric);
  if (pts.empty()) return;
  std::vector<double> xs, ys;
  auto x_of = [&](const TrialRecord& t) {
    for (const auto& ov : t.overrides) {
      if (ov.key != key) continue;
      if (numeric) return std::get<double>(ov.value.value);
      return static_cast<double>(
          std::find(categories.begin(), categories.end(), format_param(ov.value)) -
          categories.begin());
    }
    return 0.0;
  };
  for (const auto& p : pts) {
    xs.push_back(x_of(*p.trial));
    ys.push_back(p.value);
  }
  const int x0 = x + kLeft + 12, x1 = x + kPlotPanelWidth - kRight - 12;
  const int ybot = y + kPlotPanelHeight - kBottom;
  Axis xa = fit_axis(xs, x0, x1, numeric);
  if (!numeric)
    xa = {.lo = 0,
          .hi = std::max<double>(1, static_cast<double>(categories.size() - 1)),
          .p0 = x0,
          .p1 = x1};
  Axis ya = fit_axis(ys, ybot - 6, y + kTop + 4, false);
  y_ticks(c, x, ya);
  std::set<double> distinct(xs.begin(), xs.end());
  if (!numeric) {
    for (size_t i = 0; i < categories.size(); ++i)
      x_tick(c, xa.map(static_cast<double>(i)), ybot, categories[i]);
  } else if (distinct.size() <= 6) {
    for (double v : distinct) x_tick(c, xa.map(v), ybot, num(v));
  } else {
    for (int i = 0; i <= 4; ++i) {
      const double f = 0.05 + 0.9 * i / 4.0;
      const double v =
          xa.log ? std::pow(10, std::log10(xa.lo) + f * (std::log10(xa.hi) - std::log10(xa.lo)))
                 : xa.lo + f * (xa.hi - xa.lo);
      x_tick(c, xa.map(v), ybot, num(v));
    }
  }
  if (xa.log) c.text(x + kPlotPanelWidth - kRight - Canvas::text_width("log"), y + 8, "log", kAxis);
  for (size_t i = 0; i < pts.size(); ++i) {
    c.dot(xa.map(xs[i]), ya.map(ys[i]), 3,
          pts[i].trial->status == TrialStatus::kDone ? kPlotDone : kPlotStopped);
  }
}

void curves_panel(Canvas& c, int x, int y, const SweepState& s, int top_n) {
  const Objective& o = s.objective;
  std::vector<const TrialRecord*> top;
  for (const TrialRecord* t : rank_trials(s)) {
    if (static_cast<int>(top.size()) >= top_n) break;
    if (!t->history.empty() && t->status != TrialStatus::kFailed) top.push_back(t);
  }
  frame(c, x, y, "top " + std::to_string(top.size()) + " trials", o.metric);
  std::vector<double> ys;
  int64_t max_epoch = 1;
  for (const TrialRecord* t : top) {
    for (const auto& row : t->history) {
      auto it = row.values.find(o.metric);
      if (it != row.values.end() && std::isfinite(it->second)) ys.push_back(it->second);
      max_epoch = std::max(max_epoch, row.epoch);
    }
  }
  if (ys.empty()) return;
  const int ybot = y + kPlotPanelHeight - kBottom;
  Axis xa{.lo = 1,
          .hi = static_cast<double>(std::max<int64_t>(2, max_epoch)),
          .p0 = x + kLeft + 8,
          .p1 = x + kPlotPanelWidth - kRight - 8};
  Axis ya = fit_axis(ys, ybot - 6, y + kTop + 4, false);
  y_ticks(c, x, ya);
  const int64_t step = std::max<int64_t>(1, max_epoch / 6);
  for (int64_t e = 1; e <= max_epoch; e += step)
    x_tick(c, xa.map(static_cast<double>(e)), ybot, std::to_string(e));
  c.text(x + kPlotPanelWidth - kRight - Canvas::text_width("epoch"), ybot + 22, "epoch", kText);
  for (size_t i = 0; i < top.size(); ++i) {
    const Rgb color = kCurveColors[i % std::size(kCurveColors)];
    int px = -1, py = -1;
    for (const auto& row : top[i]->history) {
      auto it = row.values.find(o.metric);
      if (it == row.values.end() || !std::isfinite(it->second)) continue;
      const int nx = xa.map(static_cast<double>(row.epoch)), ny = ya.map(it->second);
      if (px >= 0) c.line(px, py, nx, ny, color);
      c.dot(nx, ny, 2, color);
      px = nx;
      py = ny;
    }
    const int ly = y + kTop + 4 + static_cast<int>(i) * 11;
    const int lx = x + kPlotPanelWidth - kRight - 70;
    c.fill_rect(lx, ly, 7, 7, color);
    c.text(lx + 10, ly, top[i]->name, kText);
  }
}

}  // namespace

Canvas draw_sweep_plot(const SweepState& state, int top_n) {
  const int panels = static_cast<int>(state.hparams.size()) + 1;
  const int cols = std::min(3, panels), rows = (panels + cols - 1) / cols;
  Canvas c(cols * kPlotPanelWidth, rows * kPlotPanelHeight, kWhite);
  for (int i = 0; i < panels; ++i) {
    const int x = (i % cols) * kPlotPanelWidth, y = (i / cols) * kPlotPanelHeight;
    if (i + 1 < panels) {
      scatter_panel(c, x, y, state, state.hparams[static_cast<size_t>(i)]);
    } else {
      curves_panel(c, x, y, state, top_n);
    }
  }
  return c;
}

void write_sweep_plot(const SweepState& state, const std::string& png_path, int top_n) {
  bool any = false;
  for (const auto& t : state.trials) any |= std::isfinite(t.final_metric(state.objective));
  TERN_CHECK_ARG(any, "plot: no trial of the sweep has a ", state.objective.metric, " to plot");
  data::write_file_bytes(png_path, draw_sweep_plot(state, top_n).encode_png());
}

}  // namespace tern::sweep
