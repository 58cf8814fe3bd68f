#include "tern/base/float_env.h"

#include <gtest/gtest.h>

#include <cfloat>
#include <cstdlib>
#include <string>
#include <thread>

namespace tern {
namespace {

// A denormal that the optimizer cannot fold away.
float multiply(float a, float b) {
  volatile float x = a, y = b;
  return x * y;
}

// First in this file (no test before it calls set_flush_denormals): the default comes from
// TERN_FLUSH_DENORMALS; ctest also runs this binary with TERN_FLUSH_DENORMALS=0.
TEST(FloatEnv, DefaultFollowsTheEnvironment) {
  const char* v = std::getenv("TERN_FLUSH_DENORMALS");
  const bool off =
      v && (std::string(v) == "0" || std::string(v) == "false" || std::string(v) == "off");
  EXPECT_EQ(flush_denormals(), !off);
}

#if defined(__x86_64__) || defined(__aarch64__)
TEST(FloatEnv, ScopeFlushesAndRestores) {
  set_flush_denormals(true);
  ASSERT_FALSE(thread_flushes_denormals());  // threads start with IEEE gradual underflow
  const float tiny = FLT_MIN / 4;            // denormal
  EXPECT_GT(multiply(tiny, 1.0f), 0.0f);
  {
    FlushDenormalsScope scope;
    EXPECT_TRUE(thread_flushes_denormals());
    EXPECT_EQ(multiply(tiny, 1.0f), 0.0f);            // input read as zero
    EXPECT_EQ(multiply(FLT_MIN, 0.25f), 0.0f);        // result flushed
    EXPECT_EQ(multiply(FLT_MIN, 2.0f), 2 * FLT_MIN);  // normal values unchanged
  }
  EXPECT_FALSE(thread_flushes_denormals());
  EXPECT_GT(multiply(tiny, 1.0f), 0.0f);
}

TEST(FloatEnv, OffKeepsDenormalsAndScopeLeavesAThreadThatFlushesAlone) {
  set_flush_denormals(false);
  {
    FlushDenormalsScope scope;
    EXPECT_FALSE(thread_flushes_denormals());
    EXPECT_GT(multiply(FLT_MIN / 4, 1.0f), 0.0f);
  }
  set_flush_denormals(true);
  set_thread_flush_denormals(true);  // the thread's own choice survives a scope
  { FlushDenormalsScope scope; }
  EXPECT_TRUE(thread_flushes_denormals());
  set_thread_flush_denormals(false);
  EXPECT_FALSE(thread_flushes_denormals());
}

TEST(FloatEnv, GenerationCountsChanges) {
  int g = flush_denormals_generation();
  set_flush_denormals(true);
  EXPECT_EQ(flush_denormals_generation(), g + 1);
  EXPECT_TRUE(flush_denormals());
  // A thread's mode is its own: another thread's is set apart from this one's.
  bool other = true;
  std::thread([&] { other = thread_flushes_denormals(); }).join();
  EXPECT_FALSE(other);
  std::thread([&] {
    set_thread_flush_denormals(true);
    other = thread_flushes_denormals();
  }).join();
  EXPECT_TRUE(other);
  EXPECT_FALSE(thread_flushes_denormals());
}
#endif

}  // namespace
}  // namespace tern
