// ProgressLine: the text, in place and cut to the width on a terminal, plain and rate-limited
// lines elsewhere, and finish() erasing the line.
#include "tern/base/progress_line.h"

#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

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

// Issue 16: a new stage (note) or pass is drawn at once, not dropped by the 10-a-second limit:
// the steps of a quick export and the passes of `data bench` showed only their first.
TEST(ProgressLine, ANewNoteOrPassIsDrawnAtOnce) {
  std::ostringstream os;
  ProgressLine p(os, "export", "steps", 3, true, -1, 200);
  p.update(0, "tracing");
  p.update(1, "tracing");  // within 0.1 s, same note: skipped
  p.update(1, "self-check");
  p.restart(10);
  p.update(2, "self-check");       // a new pass: drawn, counted against the new total
  std::vector<std::string> draws;  // the text of each in-place draw
  const std::string out = os.str();
  for (size_t at = out.find('\r'); at != std::string::npos; at = out.find('\r', at + 1))
    draws.push_back(out.substr(at + 1, out.find("\033[K", at) - at - 1));
  ASSERT_EQ(draws.size(), 3u) << out;
  EXPECT_EQ(draws[0], "export: 0/3 steps (0%) - tracing");
  EXPECT_EQ(draws[1].rfind("export: 1/3 steps (33%) - ", 0), 0u) << draws[1];
  EXPECT_NE(draws[1].find("- self-check"), std::string::npos) << draws[1];
  EXPECT_EQ(draws[2].rfind("export: 2/10 steps (20%) - ", 0), 0u) << draws[2];
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
