// push_model: next version numbers, identical copies, nothing left behind, and content_hash of
// files and folders.
#include "tern/pipeline/push.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "tern/base/error.h"
#include "tern/base/sha256.h"
#include "tern/io/atomic_file.h"
#include "tern/pipeline/content_hash.h"

namespace tern::pipeline {
namespace {

namespace fs = std::filesystem;

class PushTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("tern_push_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "model/assets");
    io::write_file_atomically((dir_ / "model/graph.tern").string(), "graph");
    io::write_file_atomically((dir_ / "model/assets/classes.txt").string(), "a\nb\n");
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(PushTest, NextVersionsIdenticalCopiesNothingLeftBehind) {
  const std::string base = (dir_ / "serving/m").string();
  EXPECT_EQ(latest_served_version(base), std::nullopt);
  PushResult a = push_model((dir_ / "model").string(), base);
  EXPECT_EQ(a.version, 1);
  EXPECT_EQ(a.path, base + "/1");
  EXPECT_EQ(content_hash(a.path), content_hash((dir_ / "model").string()));
  fs::create_directories(base + "/7");
  fs::create_directories(base + "/not_a_version");
  PushResult b = push_model((dir_ / "model").string(), base);
  EXPECT_EQ(b.version, 8);
  EXPECT_EQ(served_versions(base), (std::vector<int64_t>{1, 7, 8}));
  for (const auto& e : fs::directory_iterator(base))
    EXPECT_NE(e.path().filename().string().rfind(".tern-push-", 0), 0u) << e.path();
  EXPECT_THROW(push_model((dir_ / "nothing").string(), base), Error);
}

TEST_F(PushTest, ContentHashOfFilesAndFolders) {
  const std::string f = (dir_ / "model/graph.tern").string();
  EXPECT_EQ(content_hash(f), sha256_hex("graph"));
  const std::string before = content_hash((dir_ / "model").string());
  io::write_file_atomically((dir_ / "model/.tmp").string(), "ignored");
  EXPECT_EQ(content_hash((dir_ / "model").string()), before);
  io::write_file_atomically((dir_ / "model/assets/classes.txt").string(), "a\nc\n");
  EXPECT_NE(content_hash((dir_ / "model").string()), before);
  fs::rename(dir_ / "model/assets/classes.txt", dir_ / "model/assets/names.txt");
  const std::string renamed = content_hash((dir_ / "model").string());
  io::write_file_atomically((dir_ / "model/assets/names.txt").string(), "a\nc\n");
  EXPECT_EQ(content_hash((dir_ / "model").string()), renamed);
  EXPECT_THROW(content_hash((dir_ / "missing").string()), Error);
  EXPECT_EQ(content_hash_if_present((dir_ / "missing").string()), std::nullopt);
}

}  // namespace
}  // namespace tern::pipeline
