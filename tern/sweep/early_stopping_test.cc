// ASHA and the median stopping rule on hand-made histories.
#include "tern/sweep/early_stopping.h"

#include <gtest/gtest.h>

#include <cmath>

namespace tern::sweep {
namespace {

const Objective kMax{.metric = "val_accuracy", .mode = Objective::Mode::kMax};

TEST(EarlyStopping, AshaRungs) {
  EXPECT_EQ(asha_rungs(1, 3, 27), (std::vector<int64_t>{1, 3, 9}));
  EXPECT_EQ(asha_rungs(1, 2, 4), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(asha_rungs(2, 2, 16), (std::vector<int64_t>{2, 4, 8}));
  EXPECT_EQ(asha_rungs(3, 3, 3), (std::vector<int64_t>{}));
}

TEST(EarlyStopping, AshaKeepsTheTopFractionOfEachRung) {
  EarlyStoppingSpec spec{
      .rule = EarlyStoppingSpec::Rule::kAsha, .reduction_factor = 2, .min_epochs = 1};
  auto asha = make_early_stopper(spec, kMax, 4);  // rungs 1, 2
  EXPECT_FALSE(asha->report(0, 1, 0.80).stop);    // alone at rung 1
  EXPECT_FALSE(asha->report(0, 2, 0.85).stop);    // alone at rung 2
  EXPECT_FALSE(asha->report(0, 3, 0.86).stop);    // not a rung
  EXPECT_FALSE(asha->report(1, 1, 0.82).stop);    // best of 2 at rung 1
  StopDecision d = asha->report(2, 1, 0.10);      // 3 at rung 1, keep 1
  EXPECT_TRUE(d.stop);
  EXPECT_NE(d.reason.find("rung 1 (epoch 1)"), std::string::npos) << d.reason;
  EXPECT_NE(d.reason.find("top 1 of 3"), std::string::npos) << d.reason;
  EXPECT_FALSE(asha->report(3, 1, 0.81).stop);         // 4 at rung 1, keep 2: second best
  EXPECT_TRUE(asha->report(4, 1, std::nan("")).stop);  // a diverged trial never continues
  EXPECT_TRUE(asha->report(1, 2, 0.84).stop);          // rung 2: 2 recorded, keep 1, 0.85 is better
}

TEST(EarlyStopping, AshaMinimizes) {
  EarlyStoppingSpec spec{
      .rule = EarlyStoppingSpec::Rule::kAsha, .reduction_factor = 2, .min_epochs = 1};
  auto asha = make_early_stopper(spec, {.metric = "val_loss", .mode = Objective::Mode::kMin}, 4);
  EXPECT_FALSE(asha->report(0, 1, 0.5).stop);
  EXPECT_TRUE(asha->report(1, 1, 0.9).stop);
  EXPECT_FALSE(asha->report(2, 1, 0.4).stop);
}

TEST(EarlyStopping, MedianRule) {
  EarlyStoppingSpec spec{
      .rule = EarlyStoppingSpec::Rule::kMedian, .grace_epochs = 2, .min_trials = 2};
  auto median = make_early_stopper(spec, kMax, 5);
  for (int e = 1; e <= 3; ++e) median->record(0, e, 0.7 + 0.05 * e);  // means: .75 .775 .8
  for (int e = 1; e <= 3; ++e) median->record(1, e, 0.6 + 0.05 * e);  // .65 .675 .7
  EXPECT_FALSE(median->report(2, 1, 0.1).stop);                       // in its grace epochs
  // Epoch 2: medians of the others' running means: (.775 + .675) / 2 = .725; best .72 is worse.
  StopDecision d = median->report(2, 2, 0.72);
  EXPECT_TRUE(d.stop);
  EXPECT_NE(d.reason.find("median 0.7250 of 2 trials"), std::string::npos) << d.reason;
  EXPECT_FALSE(median->report(3, 1, 0.1).stop);
  EXPECT_FALSE(median->report(3, 2, 0.73).stop);  // best .73 beats .725
  // Epoch 3: median (.8 + .7) / 2 = .75 against its best .76.
  EXPECT_FALSE(median->report(3, 3, 0.76).stop);
  // Too few others at epoch 4: no decision.
  EXPECT_FALSE(median->report(3, 4, 0.10).stop);
}

TEST(EarlyStopping, NoneNeverStops) {
  auto none = make_early_stopper({}, kMax, 3);
  EXPECT_FALSE(none->report(0, 1, std::nan("")).stop);
}

}  // namespace
}  // namespace tern::sweep
