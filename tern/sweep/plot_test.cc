// The canvas primitives, the 5x7 font, and the sweep plot decoded back from its PNG.
#include "tern/sweep/plot.h"

#include <gtest/gtest.h>

#include "tern/data/image_codec.h"

namespace tern::sweep {
namespace {

constexpr Rgb kBlack{0, 0, 0}, kWhite{255, 255, 255};

TEST(Canvas, LinesDotsAndText) {
  Canvas c(40, 20, kWhite);
  c.line(0, 0, 9, 9, kBlack);
  for (int i = 0; i < 10; ++i) EXPECT_EQ(c.at(i, i), kBlack);
  EXPECT_EQ(c.at(1, 0), kWhite);
  c.line(20, 5, 30, 5, kBlack);
  EXPECT_EQ(c.at(25, 5), kBlack);
  c.dot(35, 15, 2, kBlack);
  EXPECT_EQ(c.at(35, 13), kBlack);
  EXPECT_EQ(c.at(38, 15), kWhite);
  c.line(-100, 19, 100, 19, kBlack);  // clipped, no crash
  EXPECT_EQ(c.at(39, 19), kBlack);

  // '1' at (12, 0): its rows 0x04 0x0C 0x04 ... put the stem at column 2 of the glyph.
  Canvas t(12, 7, kWhite);
  t.text(0, 0, "1l", kBlack);
  for (int y = 0; y < 7; ++y) EXPECT_EQ(t.at(2, y), kBlack) << y;
  EXPECT_EQ(t.at(0, 0), kWhite);
  EXPECT_EQ(t.at(6, 6), kBlack);  // 'L' (lower-case drawn upper-case): its bottom bar
  EXPECT_EQ(t.at(10, 6), kBlack);
  EXPECT_EQ(t.at(10, 0), kWhite);
  EXPECT_EQ(Canvas::text_width("ab"), 11);
  EXPECT_EQ(glyph_5x7('~'), glyph_5x7('?'));

  Tensor png = data::decode_png(c.encode_png());
  EXPECT_EQ(png.shape(), (Shape{20, 40, 3}));
  EXPECT_EQ(png.data<uint8_t>()[(5 * 40 + 25) * 3], 0);
  EXPECT_EQ(png.data<uint8_t>()[(5 * 40 + 15) * 3], 255);
}

TEST(SweepPlot, OnePanelPerKeyAndLearningCurves) {
  SweepState s;
  s.objective = {.metric = "val_accuracy"};
  s.hparams = {"optimizer.learning_rate", "optimizer.name"};
  auto add = [&](int id, double lr, const std::string& opt, TrialStatus st, std::vector<double> v) {
    TrialRecord t{.id = id, .name = "trial_" + std::to_string(id), .status = st};
    t.overrides = {{"optimizer.learning_rate", number_param(lr)},
                   {"optimizer.name", {"'" + opt + "'", opt}}};
    for (size_t e = 0; e < v.size(); ++e)
      t.history.push_back({static_cast<int64_t>(e + 1), {{"val_accuracy", v[e]}}});
    s.trials.push_back(t);
  };
  add(0, 1e-4, "adam", TrialStatus::kDone, {0.5, 0.6, 0.7});
  add(1, 1e-2, "sgd", TrialStatus::kDone, {0.6, 0.8, 0.85});
  add(2, 1.0, "adam", TrialStatus::kStopped, {0.1});
  add(3, 1e-3, "sgd", TrialStatus::kFailed, {});
  Canvas c = draw_sweep_plot(s, 3);
  EXPECT_EQ(c.width(), 3 * kPlotPanelWidth);
  EXPECT_EQ(c.height(), kPlotPanelHeight);
  auto count = [&](int x0, int x1, Rgb color) {
    int n = 0;
    for (int y = 0; y < c.height(); ++y) {
      for (int x = x0; x < x1; ++x) n += c.at(x, y) == color;
    }
    return n;
  };
  // The learning-rate panel: two done points (blue), one stopped (orange), log axis.
  EXPECT_GT(count(0, kPlotPanelWidth, kPlotDone), 2 * 20);
  EXPECT_GT(count(0, kPlotPanelWidth, kPlotStopped), 20);
  // The done points sit at different heights and x positions: 0.7 at 1e-4 lies left of and
  // below 0.85 at 1e-2.
  int left_y = -1, right_y = -1, left_x = kPlotPanelWidth, right_x = 0;
  for (int y = 0; y < c.height(); ++y) {
    for (int x = 0; x < kPlotPanelWidth; ++x) {
      if (!(c.at(x, y) == kPlotDone)) continue;
      if (x < left_x) left_x = x, left_y = y;
      if (x > right_x) right_x = x, right_y = y;
    }
  }
  EXPECT_LT(left_x + 100, right_x);
  EXPECT_GT(left_y, right_y + 20);
  // The curves panel has coloured pixels (the top 3 curves and their legend).
  EXPECT_GT(count(2 * kPlotPanelWidth, 3 * kPlotPanelWidth, Rgb{214, 39, 40}), 20);

  const std::string png = ::testing::TempDir() + "/tern_sweep_plot.png";
  write_sweep_plot(s, png);
  Tensor decoded = data::read_image_file(png);
  EXPECT_EQ(decoded.shape(), (Shape{kPlotPanelHeight, 3 * kPlotPanelWidth, 3}));
}

}  // namespace
}  // namespace tern::sweep
