// ThreadPool runs every task; parallel_for visits each index once and rethrows the first error.
#include "tern/base/thread_pool.h"

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>

#include "tern/base/error.h"

namespace tern {
namespace {

TEST(ThreadPool, RunsEveryTask) {
  std::atomic<int> done{0};
  {
    ThreadPool pool(3);
    EXPECT_EQ(pool.num_threads(), 3);
    for (int i = 0; i < 50; ++i) pool.schedule([&] { ++done; });
  }  // the destructor drains the queue
  EXPECT_EQ(done.load(), 50);
}

TEST(ThreadPool, CountsAboveTheCapAreRefusedWithTheAllowedRange) {
  EXPECT_EQ(thread_count_problem(1, false), "");
  EXPECT_EQ(thread_count_problem(kMaxThreads, false), "");
  EXPECT_EQ(thread_count_problem(0, true), "");
  EXPECT_EQ(thread_count_problem(-1, true, true), "");
  const std::string big = thread_count_problem(1000000, true);
  EXPECT_NE(big.find("must be 0 (all cores) or 1..1024"), std::string::npos) << big;
  EXPECT_NE(big.find("got 1000000"), std::string::npos) << big;
  EXPECT_NE(thread_count_problem(-1, true), "");
  EXPECT_NE(thread_count_problem(0, false), "");
  EXPECT_NE(thread_count_problem(-2, true, true).find("-1 (AUTOTUNE)"), std::string::npos);
  try {
    ThreadPool pool(static_cast<int>(kMaxThreads) + 1);
    ADD_FAILURE() << "a pool above the cap started";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
  }
}

// Bad-input report F3: a pool that could not start all its threads destroyed the joinable ones
// and std::terminate'd. In a child process whose address space has no room for the threads'
// stacks, the constructor must throw ResourceExhausted instead.
TEST(ThreadPool, AThreadTheSystemRefusesIsAnErrorNotAnAbort) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "ASan needs its own address space; RLIMIT_AS cannot be lowered under it";
#else
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    long pages = 0;
    if (FILE* f = std::fopen("/proc/self/statm", "r")) {
      if (std::fscanf(f, "%ld", &pages) != 1) pages = 0;
      std::fclose(f);
    }
    const rlim_t limit = static_cast<rlim_t>(pages) * ::sysconf(_SC_PAGESIZE) + (64 << 20);
    rlimit lim{limit, limit};
    if (pages == 0 || ::setrlimit(RLIMIT_AS, &lim) != 0) ::_exit(7);
    try {
      ThreadPool pool(500);  // 500 stacks of 8 MiB do not fit in 64 MiB
      ::_exit(3);
    } catch (const Error& e) {
      bool ok = e.code() == ErrorCode::kResourceExhausted &&
                std::string(e.what()).find("cannot start thread") != std::string::npos;
      ::_exit(ok ? 0 : 4);
    } catch (...) {
      ::_exit(5);
    }
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status)) << "the child died of signal " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 0) << "3: all threads started, 4: wrong error, 5: not an Error";
#endif
}

TEST(ParallelFor, VisitsEveryIndexOnceOnSeveralThreads) {
  std::vector<std::atomic<int>> visits(1000);
  std::mutex mu;
  std::set<std::thread::id> threads;
  parallel_for(
      1000,
      [&](int64_t i) {
        ++visits[static_cast<size_t>(i)];
        std::lock_guard<std::mutex> lock(mu);
        threads.insert(std::this_thread::get_id());
        if (threads.size() < 2) std::this_thread::yield();
      },
      4);
  for (size_t i = 0; i < visits.size(); ++i) EXPECT_EQ(visits[i].load(), 1) << i;
  EXPECT_LE(threads.size(), 4u);
  parallel_for(0, [](int64_t) { FAIL() << "no index in an empty range"; });
  int64_t sum = 0;  // one thread: in order, on the caller
  parallel_for(
      5, [&](int64_t i) { sum = sum * 10 + i; }, 1);
  EXPECT_EQ(sum, 1234);
}

TEST(ParallelFor, RethrowsTheFirstErrorAndStopsHandingOutIndices) {
  std::atomic<int64_t> ran{0};
  try {
    parallel_for(
        100000,
        [&](int64_t i) {
          ++ran;
          if (i == 10) throw_error(ErrorCode::kDataLoss, "record ", i, " is corrupt");
        },
        2);
    FAIL() << "expected the error of index 10";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kDataLoss);
    EXPECT_EQ(e.message(), "record 10 is corrupt");
  }
  EXPECT_LT(ran.load(), 100000);
  EXPECT_THROW(parallel_for(3, [](int64_t) { throw std::runtime_error("not a tern::Error"); }),
               std::runtime_error);
}

}  // namespace
}  // namespace tern
