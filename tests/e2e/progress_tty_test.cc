// The progress bar on a real terminal: the built `tern train` runs on a pseudo-terminal of 80 and
// of 120 columns (forkpty), and its output is replayed through a small terminal model (carriage
// return, line feed, erase to end of line, wrap at the last column). Every line drawn in place must
// fit the width -- a wrapped one leaves a stale line behind, since `\r` only returns to the start
// of the last screen row -- and after the last redraw a row must hold exactly the last text
// written to it (no characters of a longer earlier draw left over). Not on a terminal, the same run
// prints one line per epoch.
#include <gtest/gtest.h>
#include <pty.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "tests/support/child_process.h"
#include "tests/support/idx_writer.h"

namespace tern {
namespace {

namespace fs = std::filesystem;

// Runs `args` on a pseudo-terminal `columns` wide; everything it wrote, and its exit status.
std::string run_on_pty(const std::vector<std::string>& args, int columns, int* exit_status) {
  winsize ws{};
  ws.ws_row = 40;
  ws.ws_col = static_cast<unsigned short>(columns);
  int master = -1;
  const pid_t pid = ::forkpty(&master, nullptr, nullptr, &ws);
  if (pid == 0) {
    std::vector<char*> argv;
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::setenv("TERM", "xterm", 1);
    ::unsetenv("COLUMNS");
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  std::string out;
  char buf[4096];
  for (;;) {
    const ssize_t n = ::read(master, buf, sizeof(buf));
    if (n > 0) {
      out.append(buf, static_cast<size_t>(n));
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else {
      break;  // EIO: the child closed the terminal
    }
  }
  ::close(master);
  int status = 0;
  ::waitpid(pid, &status, 0);
  *exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return out;
}

// A terminal `width` columns wide, enough of one for a progress bar: printable ASCII, CR, LF,
// ESC [ K (erase to the end of the line); a character in the last column wraps the next one.
struct Screen {
  explicit Screen(size_t width) : width(width) {}
  size_t width;
  std::vector<std::string> rows{1};
  size_t row = 0, col = 0;
  bool pending_wrap = false;
  // Per row: drawn in place (after a CR); wrapped out of; the last text written after a CR.
  std::vector<bool> redrawn{false}, wrapped{false};
  std::vector<std::string> last_draw{""};
  int redraws = 0;
  std::string unknown;  // escape sequences the model does not know

  void next_row() {
    ++row;
    if (rows.size() <= row) {
      rows.emplace_back();
      redrawn.push_back(false);
      wrapped.push_back(false);
      last_draw.emplace_back();
    }
  }
  void feed(const std::string& bytes) {
    for (size_t i = 0; i < bytes.size(); ++i) {
      const char ch = bytes[i];
      if (ch == '\r' && i + 1 < bytes.size() && bytes[i + 1] == '\n') {
        col = 0;  // the terminal's own CR before LF (ONLCR), not a redraw
        pending_wrap = false;
      } else if (ch == '\r') {
        if (col > 0 || pending_wrap) {
          redrawn[row] = true;
          ++redraws;
        }
        col = 0;
        pending_wrap = false;
        last_draw[row].clear();
      } else if (ch == '\n') {
        pending_wrap = false;
        next_row();
      } else if (ch == '\033') {
        const size_t end = bytes.find_first_of("ABCDEFGHJKSTfmhl", i);
        const std::string seq = bytes.substr(i, end == std::string::npos ? 1 : end - i + 1);
        if (seq == "\033[K" || seq == "\033[0K") {
          if (rows[row].size() > col) rows[row].resize(col);
        } else {
          unknown += seq;
        }
        i += seq.size() - 1;
      } else {
        if (pending_wrap) {
          wrapped[row] = true;
          next_row();
          col = 0;
          pending_wrap = false;
        }
        if (rows[row].size() <= col) rows[row].resize(col + 1, ' ');
        rows[row][col] = ch;
        last_draw[row] += ch;
        if (col + 1 == width) {
          pending_wrap = true;
        } else {
          ++col;
        }
      }
    }
  }
};

class ProgressTty : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "/tern_progress_tty_" + std::to_string(::getpid());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    ::tern::testing::write_quadrant_dataset(dir_, "train", 3000, 1);
    ::tern::testing::write_quadrant_dataset(dir_, "test", 64, 2);
    config_ = dir_ + "/tiny.toml";
    std::ofstream(config_) << "[model]\nname = \"mlp\"\n[model.args]\nunits = [512, 256]\n"
                           << "[data]\ndataset = \"idx\"\nnum_classes = 4\nshuffle_buffer = 256\n"
                           << "validation_split = 0.1\n"
                           << "train_images = \"" << dir_ << "/train-images.idx\"\n"
                           << "train_labels = \"" << dir_ << "/train-labels.idx\"\n"
                           << "test_images = \"" << dir_ << "/test-images.idx\"\n"
                           << "test_labels = \"" << dir_ << "/test-labels.idx\"\n"
                           << "[training]\nepochs = 3\nbatch_size = 4\nthreads = 1\n"
                           << "[output]\ndir = \"" << dir_ << "/run\"\n";
  }
  void TearDown() override {
    if (!HasFailure()) fs::remove_all(dir_);
  }
  std::string dir_, config_;
};

TEST_F(ProgressTty, TheBarFitsTheTerminalAndLeavesNoStaleLines) {
  // Epochs long enough for several redraws (one per 0.1 s) on a fast CPU: 3000 samples took 0.08
  // s per epoch on a Zen 5 core, drawn once.
  ::tern::testing::write_quadrant_dataset(dir_, "train", 15000, 1);
  for (int columns : {80, 120}) {
    int status = -1;
    const std::string out = run_on_pty({TERN_TOOL_PATH, "train", config_}, columns, &status);
    ASSERT_EQ(status, 0) << out;
    Screen screen(static_cast<size_t>(columns));
    screen.feed(out);
    EXPECT_EQ(screen.unknown, "") << "escape sequences besides erase-line";
    EXPECT_GE(screen.redraws, 2 * 3)
        << "too few in-place redraws to test (" << columns << " columns)\n"
        << out;
    int epoch_lines = 0;
    for (size_t r = 0; r < screen.rows.size(); ++r) {
      if (!screen.redrawn[r]) continue;
      const std::string& row = screen.rows[r];
      EXPECT_FALSE(screen.wrapped[r]) << columns << " columns: a redrawn line wrapped: " << row;
      EXPECT_LT(row.size(), static_cast<size_t>(columns)) << row;
      EXPECT_EQ(row, screen.last_draw[r]) << columns << " columns: stale characters after the "
                                          << "last draw";
      EXPECT_EQ(row.find("ETA"), std::string::npos) << "an unfinished bar is left: " << row;
      if (row.find("s/step") != std::string::npos) ++epoch_lines;
    }
    EXPECT_EQ(epoch_lines, 3) << out;
    // The logs of the epoch's last line are all there, on continuation lines when narrow.
    std::string all;
    for (const auto& row : screen.rows) all += row + "\n";
    for (const char* log : {"loss: ", "accuracy: ", "val_loss: ", "val_accuracy: "})
      EXPECT_NE(all.find(log), std::string::npos) << log << " in\n" << all;
    // ETA is shown while an epoch runs.
    EXPECT_NE(out.find(" - ETA: "), std::string::npos);
  }
}

TEST_F(ProgressTty, NotATerminalOneLinePerEpoch) {
  const std::string log = dir_ + "/log.txt";
  const pid_t pid =
      ::tern::testing::spawn_logged({TERN_TOOL_PATH, "train", config_}, {"TERM=xterm"}, log);
  ASSERT_EQ(::tern::testing::wait_bounded(pid, std::chrono::seconds(120)), 0);
  const std::string out = ::tern::testing::read_log(log);
  EXPECT_EQ(out.find('\r'), std::string::npos) << "drawn in place into a file";
  EXPECT_EQ(out.find('\033'), std::string::npos);
  for (int e = 1; e <= 3; ++e) {
    EXPECT_NE(out.find("Epoch " + std::to_string(e) + "/3 - "), std::string::npos) << out;
  }
}

// The text of every in-place draw of a ProgressLine ("\r<text>\033[K") in `out`.
std::vector<std::string> progress_draws(const std::string& out, const std::string& label) {
  std::vector<std::string> draws;
  for (size_t at = out.find("\r" + label); at != std::string::npos;
       at = out.find("\r" + label, at + 1)) {
    const size_t end = out.find("\033[K", at);
    draws.push_back(out.substr(at + 1, end == std::string::npos ? end : end - at - 1));
  }
  return draws;
}

// After the last draw the progress line is erased: no row of the final screen holds it; no line
// drawn in place wrapped.
void expect_erased(const std::string& out, size_t columns, const std::string& label) {
  Screen screen(columns);
  screen.feed(out);
  EXPECT_EQ(screen.unknown, "");
  for (size_t r = 0; r < screen.rows.size(); ++r) {
    if (screen.redrawn[r]) {
      EXPECT_FALSE(screen.wrapped[r]) << "a drawn line wrapped: " << screen.rows[r];
    }
    EXPECT_EQ(screen.rows[r].rfind(label, 0), std::string::npos)
        << "a progress line was left: " << screen.rows[r] << "\n"
        << out;
  }
}

// Issue 16: long non-training work shows its progress on a terminal. `data convert` counts the
// images; `data bench` draws every pass (warm-up and measured), each with its own count, rate and
// ETA, and for a source of unknown size (a TFRecord) the total that the first pass counted;
// `export` draws each of its stages (reading, building, loading, tracing, the self-check,
// writing). Before, a quick export showed only its first step, the passes after the first were
// dropped by the redraw limit, and a TFRecord pass never had a total.
TEST_F(ProgressTty, ConvertBenchAndExportDrawEveryStageAndPass) {
  const int columns = 100;
  int status = -1;
  const std::string records = dir_ + "/train.tfrecord";
  std::string out = run_on_pty({TERN_TOOL_PATH, "data", "convert", dir_ + "/train-images.idx",
                                records, "--labels", dir_ + "/train-labels.idx"},
                               columns, &status);
  ASSERT_EQ(status, 0) << out;
  std::vector<std::string> draws = progress_draws(out, "convert: ");
  ASSERT_FALSE(draws.empty()) << out;
  EXPECT_NE(draws[0].find("/3000 images"), std::string::npos) << draws[0];
  expect_erased(out, columns, "convert: ");

  out = run_on_pty(
      {TERN_TOOL_PATH, "data", "bench", "tfrecord " + records + " | parse_example | batch 100",
       "--warmup-epochs", "1", "--epochs", "2"},
      columns, &status);
  ASSERT_EQ(status, 0) << out;
  draws = progress_draws(out, "bench: ");
  for (const char* pass : {"pass 1/3 (warm-up)", "pass 2/3 (measured)", "pass 3/3 (measured)"}) {
    bool seen = false;
    for (const std::string& d : draws) seen = seen || d.find(pass) != std::string::npos;
    EXPECT_TRUE(seen) << pass << " never drawn:\n" << out;
  }
  bool total_known = false;  // after the first pass: "bench: k/30 batches (..%)"
  for (const std::string& d : draws)
    total_known = total_known || (d.find("/30 batches") != std::string::npos &&
                                  d.find("pass 2/3") != std::string::npos);
  EXPECT_TRUE(total_known) << out;
  expect_erased(out, columns, "bench: ");
  EXPECT_NE(out.find(" rows in 60 batches"), std::string::npos) << "the summary:\n" << out;

  const pid_t trainer =
      ::tern::testing::spawn_logged({TERN_TOOL_PATH, "train", config_, "--set", "training.epochs=1",
                                     "--set", "training.batch_size=64"},
                                    {}, dir_ + "/train.log");
  ASSERT_EQ(::tern::testing::wait_bounded(trainer, std::chrono::seconds(120)), 0)
      << ::tern::testing::read_log(dir_ + "/train.log");
  out = run_on_pty({TERN_TOOL_PATH, "export", config_, "--out", dir_ + "/exported/1"}, columns,
                   &status);
  ASSERT_EQ(status, 0) << out;
  draws = progress_draws(out, "export: ");
  for (const char* stage :
       {"reading the data's shape", "building the model", "loading the weights",
        "tracing the inference graph", "self-check", "writing the model directory"}) {
    bool seen = false;
    for (const std::string& d : draws) seen = seen || d.find(stage) != std::string::npos;
    EXPECT_TRUE(seen) << "export stage '" << stage << "' never drawn:\n" << out;
  }
  expect_erased(out, columns, "export: ");
  EXPECT_NE(out.find("\033[Kexported "), std::string::npos) << "the summary after the erase:\n"
                                                            << out;
}

}  // namespace
}  // namespace tern
