// The sweep report's plot (`tern sweep report DIR --plot FILE.png`): one panel per searched key
// (each trial's final objective against its value: done trials blue, stopped ones orange; a log
// x axis when the values are positive and span at least 20x; strings and booleans as categories)
// and one panel of learning curves (objective per epoch of the top trials, a legend naming them).
// Failed trials and NaN values are left out.
#pragma once

#include <string>

#include "tern/sweep/canvas.h"
#include "tern/sweep/sweep_state.h"

namespace tern::sweep {

inline constexpr int kPlotPanelWidth = 380, kPlotPanelHeight = 280;
inline constexpr Rgb kPlotDone{31, 119, 180}, kPlotStopped{255, 127, 14};

Canvas draw_sweep_plot(const SweepState& state, int top_n = 5);
// InvalidArgument when no trial has a result to plot.
void write_sweep_plot(const SweepState& state, const std::string& png_path, int top_n = 5);

}  // namespace tern::sweep
