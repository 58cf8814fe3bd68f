// comm_overlap on hand-made traces: what counts as hidden, exposed, or neither.
#include "bench/comm_overlap.h"

#include <gtest/gtest.h>

namespace tern::bench {
namespace {

io::TraceEvent ev(const char* name, const char* cat, int64_t start_us, int64_t dur_us, int tid) {
  return {name, cat, start_us * 1000, dur_us * 1000, tid};
}

std::map<std::string, runtime::StepInfo> nodes() {
  return {{"grad/conv", {"grad/conv", "conv2d_backprop_filter", "ref", "cpu:0"}},
          {"update", {"update", "sgd_update", "ref", "cpu:0"}},
          {"wait0", {"wait0", "all_reduce_wait", "mpi", "cpu:0"}},
          {"start0", {"start0", "all_reduce_start", "mpi", "cpu:0"}}};
}

TEST(CommOverlap, SplitsCommTimeIntoHiddenExposedAndGaps) {
  // Main thread 1: compute 0-100, gap 100-110, wait 110-150, compute 150-200.
  // Comm thread 2: one all-reduce 60-150 (40 under compute, 10 in the gap, 40 under the wait).
  std::vector<io::TraceEvent> events = {
      ev("train_step", "step", 0, 200, 1), ev("grad/conv", "op", 0, 100, 1),
      ev("wait0", "op", 110, 40, 1), ev("update", "op", 150, 50, 1),
      ev("all_reduce/bucket0", "comm", 60, 90, 2)};
  CommOverlap r = comm_overlap(events, nodes());
  EXPECT_EQ(r.train_steps, 1);
  EXPECT_EQ(r.comm_events, 1);
  EXPECT_TRUE(r.has_threads);
  EXPECT_NEAR(r.comm_seconds, 90e-6, 1e-12);
  EXPECT_NEAR(r.compute_seconds, 150e-6, 1e-12);
  EXPECT_NEAR(r.wait_seconds, 40e-6, 1e-12);
  EXPECT_NEAR(r.backward_seconds, 100e-6, 1e-12);
  EXPECT_NEAR(r.hidden_fraction(), 40.0 / 90, 1e-9);
  EXPECT_NEAR(r.exposed_fraction(), 40.0 / 90, 1e-9);
}

TEST(CommOverlap, CommInsideAStartIsNeitherHiddenNorExposed) {
  // The start op 0-20 wakes the comm thread, which runs 5-20 inside it, then 20-30 under compute.
  std::vector<io::TraceEvent> events = {
      ev("train_step", "step", 0, 40, 1), ev("start0", "op", 0, 20, 1),
      ev("grad/conv", "op", 20, 20, 1), ev("all_reduce/bucket0", "comm", 5, 25, 2)};
  CommOverlap r = comm_overlap(events, nodes());
  EXPECT_NEAR(r.compute_seconds, 20e-6, 1e-12);
  EXPECT_NEAR(r.hidden_fraction(), 10.0 / 25, 1e-9);
  EXPECT_NEAR(r.in_start_fraction(), 15.0 / 25, 1e-9);
  EXPECT_EQ(r.exposed_fraction(), 0);
}

TEST(CommOverlap, SameThreadAndNoCommAreReported) {
  std::vector<io::TraceEvent> events = {ev("train_step", "step", 0, 10, 1),
                                        ev("grad/conv", "op", 0, 10, 1)};
  CommOverlap r = comm_overlap(events, nodes());
  EXPECT_FALSE(r.has_threads);
  EXPECT_EQ(r.hidden_fraction(), 0);
  events.push_back(ev("all_reduce/bucket0", "comm", 0, 5, 1));
  EXPECT_FALSE(comm_overlap(events, nodes()).has_threads);
}

TEST(CommOverlap, OverlapAcrossManyIntervals) {
  std::vector<std::pair<int64_t, int64_t>> b = {{0, 10}, {20, 30}, {40, 50}};
  EXPECT_EQ(overlap_ns(5, 45, b), 5 + 10 + 5);
  EXPECT_EQ(overlap_ns(10, 20, b), 0);
  EXPECT_EQ(overlap_ns(60, 70, b), 0);
  EXPECT_EQ(overlap_ns(-5, 100, b), 30);
}

}  // namespace
}  // namespace tern::bench
