// Atomic writes follow symlinks and write devices and FIFOs in place (bad-input report F2: a
// metrics file at /dev/full or /dev/null replaced the device node, a symlink to /proc/self/fd/1
// was replaced by a regular file); whole reads take regular files only (F14: /dev/zero grew to
// the memory limit, a FIFO blocked forever). Device nodes are private ones made with mknod in a
// temporary folder (skipped without CAP_MKNOD), never the system's.
#include "tern/io/atomic_file.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <future>

#include "tests/support/random_tensor.h"

namespace tern::io {
namespace {

namespace fs = std::filesystem;

std::string temp_dir(const std::string& name) {
  std::string d = str_cat(::testing::TempDir(), "/tern_atomic_", name, "_", ::getpid());
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

// A private character device node (1, minor): 3 = null, 5 = zero, 7 = full. False without
// permission.
bool make_char_device(const std::string& path, unsigned minor) {
  return ::mknod(path.c_str(), S_IFCHR | 0666, makedev(1, minor)) == 0;
}

bool is_char_device(const std::string& path) {
  struct stat st;
  return ::lstat(path.c_str(), &st) == 0 && S_ISCHR(st.st_mode);
}

TEST(AtomicFile, ReplacesARegularFileAndKeepsItsMode) {
  std::string dir = temp_dir("regular");
  std::string path = dir + "/m.json";
  write_file_atomically(path, "old");
  ASSERT_EQ(::chmod(path.c_str(), 0600), 0);
  write_file_atomically(path, "new");
  EXPECT_EQ(read_file(path), "new");
  EXPECT_EQ(fs::status(path).permissions() & fs::perms::all,
            fs::perms::owner_read | fs::perms::owner_write);
  EXPECT_EQ(std::distance(fs::directory_iterator(dir), fs::directory_iterator()), 1);
}

TEST(AtomicFile, FollowsSymlinksAndKeepsTheLink) {
  std::string dir = temp_dir("symlink");
  fs::create_directories(dir + "/real");
  write_file_atomically(dir + "/real/target.json", "old");
  fs::create_symlink("real/target.json", dir + "/link1");  // relative
  fs::create_symlink(dir + "/link1", dir + "/link2");      // absolute, a chain
  write_file_atomically(dir + "/link2", "new");
  EXPECT_TRUE(fs::is_symlink(dir + "/link2"));
  EXPECT_TRUE(fs::is_symlink(dir + "/link1"));
  EXPECT_EQ(read_file(dir + "/real/target.json"), "new");
  // A dangling link: its target is created, the link stays.
  fs::create_symlink("real/created.json", dir + "/dangling");
  write_file_atomically(dir + "/dangling", "made");
  EXPECT_TRUE(fs::is_symlink(dir + "/dangling"));
  EXPECT_EQ(read_file(dir + "/real/created.json"), "made");
  // A loop is an error, not a replaced link.
  fs::create_symlink(dir + "/loop_b", dir + "/loop_a");
  fs::create_symlink(dir + "/loop_a", dir + "/loop_b");
  EXPECT_TERN_ERROR(write_file_atomically(dir + "/loop_a", "x"), ErrorCode::kInvalidArgument,
                    "symbolic links");
  EXPECT_TRUE(fs::is_symlink(dir + "/loop_a"));
}

TEST(AtomicFile, WritesADeviceInPlace) {
  std::string dir = temp_dir("device");
  std::string null_node = dir + "/null", full_node = dir + "/full";
  if (!make_char_device(null_node, 3) || !make_char_device(full_node, 7)) {
    GTEST_SKIP() << "mknod not permitted here";
  }
  write_file_atomically(null_node, "{\"metrics\": 1}\n");
  EXPECT_TRUE(is_char_device(null_node)) << "the device node was replaced";
  // /dev/full: the write fails (ENOSPC), reported, and the node stays.
  EXPECT_TERN_ERROR(write_file_atomically(full_node, "x"), ErrorCode::kUnavailable,
                    "No space left on device");
  EXPECT_TRUE(is_char_device(full_node));
  // Through a symlink to the device: the link and the node both stay.
  fs::create_symlink(null_node, dir + "/to_null");
  write_file_atomically(dir + "/to_null", "x");
  EXPECT_TRUE(fs::is_symlink(dir + "/to_null"));
  EXPECT_TRUE(is_char_device(null_node));
  EXPECT_EQ(std::distance(fs::directory_iterator(dir), fs::directory_iterator()), 3);
}

TEST(AtomicFile, WritesAFifoInPlace) {
  std::string dir = temp_dir("fifo");
  std::string fifo = dir + "/pipe";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  // The reading end, opened first without blocking: the write then finds a reader.
  int rfd = ::open(fifo.c_str(), O_RDONLY | O_NONBLOCK);
  ASSERT_GE(rfd, 0);
  write_file_atomically(fifo, "through the pipe");
  char buf[64];
  ssize_t r = ::read(rfd, buf, sizeof(buf));
  ::close(rfd);
  EXPECT_EQ(std::string(buf, r > 0 ? static_cast<size_t>(r) : 0), "through the pipe");
  struct stat st;
  ASSERT_EQ(::lstat(fifo.c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode)) << "the FIFO was replaced";
}

TEST(AtomicFile, ADirectoryIsAnError) {
  std::string dir = temp_dir("dir");
  EXPECT_TERN_ERROR(write_file_atomically(dir, "x"), ErrorCode::kInvalidArgument, "is a directory");
}

TEST(ReadFile, RefusesDirectoriesDevicesAndFifosWithoutBlocking) {
  std::string dir = temp_dir("read");
  EXPECT_TERN_ERROR(read_file(dir), ErrorCode::kInvalidArgument,
                    "not a regular file (a directory)");
  std::string fifo = dir + "/pipe";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  // A reader that blocked in open() would wait for a writer forever: run it aside, and unblock
  // it by opening the writing end if it is still waiting after 10 s.
  std::future<std::string> got = std::async(std::launch::async, [&]() -> std::string {
    try {
      read_file(fifo);
      return "read";
    } catch (const Error& e) {
      return e.what();
    }
  });
  if (got.wait_for(std::chrono::seconds(10)) != std::future_status::ready) {
    int fd = ::open(fifo.c_str(), O_WRONLY);
    ::close(fd);
    ADD_FAILURE() << "read_file blocked on a FIFO";
  }
  EXPECT_NE(got.get().find("not a regular file (a FIFO)"), std::string::npos);
  std::string null_node = dir + "/null";
  if (make_char_device(null_node, 3)) {
    EXPECT_TERN_ERROR(read_file(null_node), ErrorCode::kInvalidArgument, "a character device");
  }
}

TEST(ReadFile, FollowsSymlinksAndChecksTheSizeFirst) {
  std::string dir = temp_dir("size");
  write_file_atomically(dir + "/f", "0123456789");
  fs::create_symlink(dir + "/f", dir + "/link");
  EXPECT_EQ(read_file(dir + "/link"), "0123456789");
  EXPECT_EQ(read_file(dir + "/f", 10), "0123456789");
  EXPECT_TERN_ERROR(read_file(dir + "/f", 9), ErrorCode::kResourceExhausted, "10 bytes");
  EXPECT_TERN_ERROR(read_file(dir + "/missing"), ErrorCode::kNotFound, "missing");
}

TEST(CheckWritableDirectory, CreatesTheFolderAndLeavesNothingBehind) {
  std::string dir = temp_dir("writable") + "/a/b";
  check_writable_directory(dir, "output.dir");
  EXPECT_TRUE(fs::is_directory(dir));
  EXPECT_TRUE(fs::is_empty(dir));
  std::string file = temp_dir("writable_file") + "/f";
  write_file_atomically(file, "x");
  EXPECT_TERN_ERROR(check_writable_directory(file + "/sub", "output.dir"), ErrorCode::kUnavailable,
                    "output.dir '" + file + "/sub': cannot create it");
}

}  // namespace
}  // namespace tern::io
