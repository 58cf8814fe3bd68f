// ProgressLine: the text, in place and cut to the width on a terminal, plain and rate-limited
// lines elsewhere, and finish() erasing the line.
#include "tern/base/progress_line.h"

#include <gtest/gtest.h>

#include <sstream>

namespace tern {
namespace {

TEST(ProgressLine, Text) {
  std::ostringstream os;
  ProgressLine p(os, "convert", "images", 60000, false);
  EXPECT_EQ(p.text(12000, "", 5.0), "convert: 12000/60000 images (20%) - 2400/s - ETA 20s");
  EXPECT_EQ(p.text(0, "pass 1/2", 0), "convert: 0/60000 images (0%) - pass 1/2");
  ProgressLine unknown(os, "bench", "batches", -1, false);
  EXPECT_EQ(unknown.text(30, "", 3.0), "bench: 30 batches - 10/s");
}

TEST(ProgressLine, InPlaceOnATerminalCutToTheWidth) {
  std::ostringstream os;
  {
    ProgressLine p(os, "convert", "images", 60000, true, -1, 20);
    p.update(100);
  }
  EXPECT_EQ(os.str(), "\rconvert: 100/60000 \033[K\r\033[K");  // 19 columns, then erased
}

TEST(ProgressLine, ElsewhereAPlainLineAtMostEveryInterval) {
  std::ostringstream os;
  ProgressLine p(os, "convert", "images", 10, false, -1, 0, /*log_interval=*/0);
  p.update(5);
  p.finish();
  EXPECT_EQ(os.str().substr(0, 27), "convert: 5/10 images (50%) ");
  EXPECT_EQ(os.str().back(), '\n');
  std::ostringstream quiet;
  ProgressLine q(quiet, "convert", "images", 10, false);  // every 10 s
  q.update(5);
  q.finish();
  EXPECT_EQ(quiet.str(), "");
}

}  // namespace
}  // namespace tern
