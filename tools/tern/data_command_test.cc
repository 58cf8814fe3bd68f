// `tern data inspect | convert | bench` on the command line: usage errors and dispatch to the
// library (tern/data's convert, inspect and pipeline tests check what each one does).
#include <gtest/gtest.h>

#include <filesystem>

#include "tern/data/data.h"
#include "tests/support/idx_writer.h"
#include "tools/tern/cli_parse.h"
#include "tools/tern/commands.h"

namespace tern::tools {
namespace {

namespace fs = std::filesystem;

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "tern_data_cmd_XXXXXX").string();
    path_ = mkdtemp(tmpl.data());
  }
  ~TempDir() { fs::remove_all(path_); }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// 12 images of 6x5, label i % 3.
void write_idx(const TempDir& dir) {
  std::vector<uint8_t> images, labels;
  for (int i = 0; i < 12; ++i) {
    labels.push_back(static_cast<uint8_t>(i % 3));
    for (int p = 0; p < 30; ++p) images.push_back(static_cast<uint8_t>(i * 20 + p * 3));
  }
  ::tern::testing::write_idx_u8(dir.file("images.idx"), {12, 6, 5}, images);
  ::tern::testing::write_idx_u8(dir.file("labels.idx"), {12}, labels);
}

int run(std::vector<std::string> args) {
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  return cmd_data(static_cast<int>(argv.size()), argv.data());
}

TEST(DataCommand, UsageAndDispatch) {
  TempDir dir;
  write_idx(dir);
  EXPECT_EQ(run({"data"}), 2);
  EXPECT_EQ(run({"data", "--help"}), 0);
  EXPECT_EQ(run({"data", "frobnicate"}), 2);
  EXPECT_EQ(run({"data", "inspect"}),
            2);  // CLI11's 106 (required argument missing) is a usage error
  EXPECT_EQ(run({"data", "inspect", dir.file("images.idx"), "-n", "1"}), 0);
  EXPECT_EQ(run({"data", "convert", dir.file("images.idx"), dir.file("o"), "--labels",
                 dir.file("labels.idx"), "--size", "7x9"}),
            0);
  EXPECT_EQ(
      data::read_image_file(data::list_image_folder(dir.file("o")).files[0]).type().to_string(),
      "u8[7, 9, 1]");
  EXPECT_THROW(run({"data", "convert", dir.file("images.idx"), dir.file("p"), "--size", "x"}),
               UsageError);  // main: exit 2
  ::testing::internal::CaptureStdout();
  EXPECT_EQ(run({"data", "bench", "idx " + dir.file("images.idx") + " | crop 4 4 | flip | batch 4",
                 "--epochs", "2"}),
            0);
  const std::string out = ::testing::internal::GetCapturedStdout();
  EXPECT_NE(out.find("pipeline: idx -> map(random_crop+random_flip) -> batch(4)"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("24 rows in 6 batches"), std::string::npos) << out;
  EXPECT_THROW(run({"data", "bench", "idx " + dir.file("images.idx") + " | zoom 2"}), Error);
}

}  // namespace
}  // namespace tern::tools
