// Configs from the bad-input report (BAD-INPUTS-2026-11-23): each value here was accepted, crashed
// or was silently changed before its fix; now each is an error naming the file, line and key.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "tern/config/config.h"
#include "tests/support/random_tensor.h"

namespace tern::config {
namespace {

std::string write_config(const std::string& name, const std::string& text) {
  std::string dir = ::testing::TempDir() + "/tern_bad_input_config_test";
  std::filesystem::create_directories(dir);
  std::string path = dir + "/" + name;
  std::ofstream(path) << text;
  return path;
}

const char* kTfrecordData = R"([data]
source = "tfrecord"
train_files = "train.tfrecord"
test_files = "test.tfrecord"
input = "image/encoded"
label = "image/class/label"
num_classes = 10
[data.features]
"image/encoded" = {type = "bytes", dtype = "u8", shape = [28, 28, 1]}
"image/class/label" = {type = "int64"}
)";

// F3: 10^5..10^6 threads crashed (SIGSEGV in libgomp, std::terminate in the thread pool).
TEST(BadInputConfig, ThreadCountsAreBounded) {
  std::string p = write_config("threads.toml", "[training]\nepochs = 1\n\nthreads = 1000000\n");
  EXPECT_TERN_ERROR(load_config(p), ErrorCode::kInvalidArgument,
                    "threads.toml:4: key 'training.threads' must be 0 (all cores) or 1..1024");
  EXPECT_TERN_ERROR(load_config(p, {"training.threads=-1"}), ErrorCode::kInvalidArgument,
                    "key 'training.threads' must be 0 (all cores) or 1..1024");
  EXPECT_EQ(load_config(p, {"training.threads=1024"}).training.threads, 1024);
  std::string t = write_config("parallel.toml", std::string(kTfrecordData) + R"(
[[data.transforms]]
op = "batch"
[[data.transforms]]
op = "parse"
parallel = 1000000
)");
  EXPECT_TERN_ERROR(load_config(t), ErrorCode::kInvalidArgument,
                    "key 'data.transforms[1].parallel' must be -1 (AUTOTUNE), 1..1024");
  std::string i = write_config("image_parallel.toml", R"([data]
source = "image_dir"
train_dir = "train"
test_dir = "test"
num_classes = 2
[data.image_dir]
image_size = [8, 8]
parallel = 100000
)");
  EXPECT_TERN_ERROR(load_config(i), ErrorCode::kInvalidArgument,
                    "key 'data.image_dir.parallel' must be -1 (AUTOTUNE), 1..1024");
}

}  // namespace
}  // namespace tern::config
