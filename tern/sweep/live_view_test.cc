// LiveView: the counts line, a running trial's line, plain lines vs in-place redraws.
#include "tern/sweep/live_view.h"

#include <gtest/gtest.h>

#include <sstream>

namespace tern::sweep {
namespace {

SweepState state() {
  SweepState s;
  s.objective = {.metric = "val_accuracy"};
  s.epochs = 4;
  s.start_time = 1000;
  TrialRecord running{.id = 0, .name = "trial_000", .status = TrialStatus::kRunning};
  running.overrides = {{"optimizer.learning_rate", number_param(0.01)}};
  running.start_time = 1000;
  running.history = {{1, {{"val_accuracy", 0.5}}}, {2, {{"val_accuracy", 0.75}}}};
  s.trials = {running,
              {.id = 1, .name = "trial_001", .status = TrialStatus::kDone},
              {.id = 2, .name = "trial_002", .status = TrialStatus::kStopped},
              {.id = 3, .name = "trial_003", .status = TrialStatus::kPending}};
  return s;
}

TEST(LiveView, Lines) {
  SweepState s = state();
  EXPECT_EQ(LiveView::counts(s, 1062),
            "done 1 | running 1 | stopped 1 | failed 0 | pending 1 | 1m02s");
  // 2 of 4 epochs in 20 s: 20 s to go.
  EXPECT_EQ(LiveView::trial_line(s.trials[0], s, 1020),
            "trial_000  learning_rate=0.01  epoch 2/4  val_accuracy 0.7500  ETA 20s");
  EXPECT_EQ(format_duration(3725), "1h02m");
}

TEST(LiveView, PlainLinesOrRedrawsInPlace) {
  SweepState s = state();
  std::ostringstream plain;
  LiveView p(plain, false);
  p.event("trial_000 started", s, 1001);
  p.update(s, 1002);
  p.update(s, 1003);  // same counts: nothing new
  EXPECT_EQ(plain.str(),
            "trial_000 started\ndone 1 | running 1 | stopped 1 | failed 0 | pending 1 | 2s\n");
  EXPECT_EQ(plain.str().find('\x1b'), std::string::npos);

  std::ostringstream term;
  LiveView t(term, true);
  t.update(s, 1010, true);
  t.event("trial_001 done", s, 1011);
  const std::string out = term.str();
  // Block (1 running trial + counts), then: up 2 lines, clear, the event, the block again.
  EXPECT_NE(out.find("  trial_000 "), std::string::npos) << out;
  EXPECT_NE(out.find("\x1b[2F\x1b[Jtrial_001 done\n  trial_000"), std::string::npos) << out;
  t.finish();
  EXPECT_EQ(term.str().substr(term.str().size() - 7), "\x1b[2F\x1b[J");
}

}  // namespace
}  // namespace tern::sweep
