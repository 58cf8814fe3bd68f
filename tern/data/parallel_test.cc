// Tests for the asynchronous stages: parallel map (ordered and not), prefetch, error delivery,
// shutdown mid-stream, and AUTOTUNE.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>

#include "tern/base/thread_pool.h"
#include "tern/data/autotune.h"
#include "tern/data/test_util.h"

namespace tern::data {
namespace {

using testing::iota;
using testing::values_of;

// Squares with a per-element delay that varies, so finishing order differs from input order.
Element slow_square(Element e) {
  const int64_t v = static_cast<int64_t>(e[0].get(0));
  std::this_thread::sleep_for(std::chrono::microseconds(((v * 37) % 7) * 200));
  return {Tensor::scalar(DType::kI64, static_cast<double>(v * v))};
}

std::vector<int64_t> squares(int64_t n) {
  std::vector<int64_t> out;
  for (int64_t i = 0; i < n; ++i) out.push_back(i * i);
  return out;
}

TEST(ParallelMap, OrderedMatchesSequential) {
  for (int64_t threads : {int64_t{1}, int64_t{2}, int64_t{4}, kAutotune}) {
    EXPECT_EQ(values_of(range(40)->map(slow_square, {.num_parallel_calls = threads})), squares(40))
        << threads;
  }
}

TEST(ParallelMap, UnorderedYieldsTheSameMultiset) {
  std::vector<int64_t> got =
      values_of(range(40)->map(slow_square, {.num_parallel_calls = 4, .deterministic = false}));
  std::sort(got.begin(), got.end());
  EXPECT_EQ(got, squares(40));
}

TEST(ParallelMap, ShuffleThenMapIsDeterministicAcrossThreadCounts) {
  std::vector<int64_t> one = values_of(range(200)->shuffle(64, 11)->map(slow_square));
  std::vector<int64_t> four =
      values_of(range(200)->shuffle(64, 11)->map(slow_square, {.num_parallel_calls = 4}));
  EXPECT_EQ(one, four);
}

TEST(ParallelMap, ErrorsArriveInOrderAndIterationContinues) {
  auto fn = [](Element e) {
    const int64_t v = static_cast<int64_t>(e[0].get(0));
    if (v == 3) throw_error(ErrorCode::kInvalidArgument, "bad element ", v);
    return e;
  };
  for (int64_t threads : {int64_t{0}, int64_t{3}}) {
    Iterator it = range(6)->map(fn, {.num_parallel_calls = threads})->make_iterator();
    std::vector<int64_t> seen;
    for (int i = 0; i < 3; ++i) seen.push_back(static_cast<int64_t>(it.next()->at(0).get(0)));
    EXPECT_TERN_ERROR(it.next(), ErrorCode::kInvalidArgument, "bad element 3");
    for (auto e = it.next(); e; e = it.next())
      seen.push_back(static_cast<int64_t>(e->at(0).get(0)));
    EXPECT_EQ(seen, (std::vector<int64_t>{0, 1, 2, 4, 5})) << threads;
  }
}

TEST(ParallelMap, DestroyMidStreamDoesNotHang) {
  std::atomic<int> calls{0};
  {
    Iterator it = range(1000000)
                      ->map(
                          [&calls](Element e) {
                            ++calls;
                            std::this_thread::sleep_for(std::chrono::milliseconds(1));
                            return e;
                          },
                          {.num_parallel_calls = 4})
                      ->make_iterator();
    for (int i = 0; i < 5; ++i) ASSERT_TRUE(it.next());
  }
  EXPECT_LT(calls.load(), 100);
}

TEST(Prefetch, PreservesOrderAndEnds) {
  for (int64_t depth : {int64_t{1}, int64_t{3}, kAutotune}) {
    Iterator it = range(50)->map(slow_square)->prefetch(depth)->make_iterator();
    std::vector<int64_t> got = testing::scalars(it.take());
    EXPECT_EQ(got, squares(50)) << depth;
    EXPECT_FALSE(it.next().has_value());
  }
}

TEST(Prefetch, DestroyMidStreamOfAnInfinitePipelineDoesNotHang) {
  for (int round = 0; round < 20; ++round) {
    Iterator it = range(7)
                      ->repeat()
                      ->map(slow_square, {.num_parallel_calls = 2})
                      ->prefetch(4)
                      ->make_iterator();
    for (int i = 0; i < round; ++i) ASSERT_TRUE(it.next());
  }
}

TEST(Prefetch, DeliversInputErrorsInOrder) {
  auto fn = [](Element e) {
    if (e[0].get(0) == 2) throw_error(ErrorCode::kDataLoss, "corrupt element 2");
    return e;
  };
  Iterator it = range(4)->map(fn)->prefetch(2)->make_iterator();
  EXPECT_EQ(it.next()->at(0).get(0), 0);
  EXPECT_EQ(it.next()->at(0).get(0), 1);
  EXPECT_TERN_ERROR(it.next(), ErrorCode::kDataLoss, "corrupt element 2");
  EXPECT_EQ(it.next()->at(0).get(0), 3);
  EXPECT_FALSE(it.next().has_value());
}

TEST(Prefetch, RejectsZeroBuffer) {
  EXPECT_TERN_ERROR(range(3)->prefetch(0), ErrorCode::kInvalidArgument, "buffer_size");
  EXPECT_TERN_ERROR(range(3)->map([](Element e) { return e; }, {.num_parallel_calls = -5}),
                    ErrorCode::kInvalidArgument, "num_parallel_calls");
}

}  // namespace
}  // namespace tern::data

namespace tern::data {
namespace {

int64_t tuned_value(const Iterator& it, const std::string& stage) {
  for (const StageStats& s : it.stats()) {
    if (s.stage == stage) return s.tunable;
  }
  return -1;
}

TEST(Autotune, MapParallelismGrowsWhileTheConsumerWaits) {
  auto slow = [](Element e) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    return e;
  };
  Iterator it = range(200)->map(slow, {.num_parallel_calls = kAutotune})->make_iterator();
  EXPECT_EQ(tuned_value(it, "ParallelMap"), 1);
  EXPECT_EQ(testing::scalars(it.take()), iota(0, 200));
  // Every request waited, so the knob grew one step per window of requests, up to its cap (the
  // core count): the cap on a small machine, 1 + 200 / kWindow = 13 on a big one.
  const int64_t cores = available_cores();
  EXPECT_EQ(tuned_value(it, "ParallelMap"),
            std::min<int64_t>(cores, 1 + 200 / AutotuneKnob::kWindow));
  const StageStats map = it.stats()[0];
  EXPECT_EQ(map.elements, 200);
  EXPECT_GT(map.wait_sec, 0.0);
  EXPECT_GT(map.elements_per_sec, 0.0);
}

TEST(Autotune, KnobsStayPutWhenTheProducerKeepsUp) {
  Iterator it = range(100)
                    ->map([](Element e) { return e; }, {.num_parallel_calls = kAutotune})
                    ->prefetch(kAutotune)
                    ->make_iterator();
  for (int i = 0; i < 100; ++i) {
    if (i > 0) {
      // A consumer slower than the producer: it only asks once the buffer is full again.
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
      while (it.stats()[0].buffered < 1 && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::microseconds(200));
      }
    }
    ASSERT_TRUE(it.next());
  }
  EXPECT_EQ(tuned_value(it, "Prefetch"), 1);
}

TEST(Autotune, PrefetchDepthGrowsForASlowProducer) {
  auto slow = [](Element e) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    return e;
  };
  Iterator it = range(100)->map(slow)->prefetch(kAutotune)->make_iterator();
  it.take();
  // Grown one step per window of waiting requests (100 of them), up to the cap max(2, cores).
  EXPECT_EQ(tuned_value(it, "Prefetch"),
            std::min<int64_t>(std::max(2, available_cores()), 1 + 100 / AutotuneKnob::kWindow));
}

// The rule the stage tests rely on, on a cap no 2-core machine reaches: one step per window.
TEST(AutotuneKnob, GrowsOneStepPerWindowOnABigMachine) {
  AutotuneKnob knob(true, 1, 64);
  for (int i = 0; i < 200; ++i) knob.record(true);
  EXPECT_EQ(knob.value(), 1 + 200 / AutotuneKnob::kWindow);
  for (int i = 0; i < 64 * AutotuneKnob::kWindow; ++i) knob.record(true);
  EXPECT_EQ(knob.value(), 64);
}

TEST(AutotuneKnob, GrowsByWindowsUpToTheCap) {
  AutotuneKnob knob(true, 1, 3);
  int changes = 0;
  for (int i = 0; i < 10 * AutotuneKnob::kWindow; ++i) changes += knob.record(true) ? 1 : 0;
  EXPECT_EQ(knob.value(), 3);
  EXPECT_EQ(changes, 2);
  AutotuneKnob calm(true, 1, 8);
  for (int i = 0; i < 10 * AutotuneKnob::kWindow; ++i) calm.record(i % 20 == 0);  // 5% waits
  EXPECT_EQ(calm.value(), 1);
  AutotuneKnob fixed(false, 4, 4);
  for (int i = 0; i < 100; ++i) fixed.record(true);
  EXPECT_EQ(fixed.value(), 4);
}

}  // namespace
}  // namespace tern::data
