// ProgressBar's line fitting: the bar narrows, then logs are left out from the end, then the line
// is cut; the final line breaks at " - " instead of wrapping (the pseudo-terminal test in
// tests/e2e/progress_tty_test.cc runs the whole thing on 80 and 120 columns).
#include "tern/train/progress.h"

#include <gtest/gtest.h>

#include <sstream>

namespace tern::train {
namespace {

const OrderedLogs kLogs = {{"loss", 0.4321}, {"accuracy", 0.8765}};

TEST(ProgressBarFit, WideTerminalsGetTheFullBar) {
  std::ostringstream os;
  ProgressBar bar(os, true, 0, 5, 469, 120);
  EXPECT_EQ(bar.bar_line(123, kLogs, " - ETA: 5s", 119),
            "123/469 [======>.......................] - ETA: 5s - loss: 0.4321 - accuracy: 0.8765");
}

TEST(ProgressBarFit, NarrowTerminalsNarrowTheBarThenDropLogs) {
  std::ostringstream os;
  ProgressBar bar(os, true, 0, 5, 469, 80);
  const std::string at79 = bar.bar_line(123, kLogs, " - ETA: 5s", 79);
  EXPECT_LE(at79.size(), 79u);
  EXPECT_NE(at79.find("accuracy: 0.8765"), std::string::npos) << at79;  // the bar gave way
  EXPECT_EQ(at79.find("["), 8u) << at79;
  const std::string at50 = bar.bar_line(123, kLogs, " - ETA: 5s", 50);
  EXPECT_LE(at50.size(), 50u);
  EXPECT_EQ(at50.find("accuracy"), std::string::npos) << at50;  // the last log went first
  EXPECT_NE(at50.find("loss: 0.4321"), std::string::npos) << at50;
  EXPECT_EQ(bar.bar_line(123, kLogs, " - ETA: 5s", 30), "123/469 [=>........] - ETA: 5s");
  EXPECT_EQ(bar.bar_line(123, kLogs, " - ETA: 5s", 29), "123/469 - ETA: 5s");  // no 10 columns
  EXPECT_EQ(bar.bar_line(123, kLogs, " - ETA: 5s", 10), "123/469 - ");
}

TEST(ProgressBarFit, TheFinalLineBreaksInsteadOfWrapping) {
  std::ostringstream os;
  ProgressBar bar(os, true, 0, 5, 469, 50);
  OrderedLogs logs = kLogs;
  logs.push_back({"val_loss", 0.5});
  logs.push_back({"val_accuracy", 0.75});
  bar.finish(469, 469 * 32, logs);
  std::istringstream lines(os.str());
  std::string line;
  std::getline(lines, line);  // "Epoch 1/5"
  int n = 0;
  while (std::getline(lines, line)) {
    ++n;
    const std::string text = line.substr(line[0] == '\r' ? 1 : 0);
    EXPECT_LE(text.size(), 49u + 3) << text;  // + the erase-line sequence
    EXPECT_EQ(text.substr(text.size() - 3), "\033[K");
  }
  EXPECT_GE(n, 3) << os.str();
  EXPECT_NE(os.str().find("\n    val_loss: 0.5000 - val_accuracy: 0.7500"), std::string::npos)
      << os.str();
}

}  // namespace
}  // namespace tern::train
