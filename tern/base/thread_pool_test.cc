// ThreadPool runs every task; parallel_for visits each index once and rethrows the first error.
#include "tern/base/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <set>
#include <stdexcept>
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
