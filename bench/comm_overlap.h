// How much of the gradient all-reduce a data-parallel step hides, read from a trace
// (io::ChromeTraceSink, which keeps each event's recording thread):
//   comm     the reducer thread's "all_reduce/bucketN" scopes (category "comm");
//   compute  the main thread's op scopes other than the collectives all_reduce_start/_wait (the
//            thread that records the "train_step" scopes; a start wakes the comm thread, which
//            may take the core inside the start's scope);
//   wait     the main thread's all_reduce_wait op scopes (the step blocked on a bucket).
// hidden = |comm ∩ compute| / |comm|, exposed = |comm ∩ wait| / |comm|, in_start =
// |comm ∩ start| / |comm| (the main thread was preempted by the comm thread it just woke: neither
// hidden nor waited on, but the core did nothing else); the rest fell between ops. Overlap is in
// wall time: with one core per worker the two threads share that core, so hidden time is not free
// (the caller measures each thread's CPU and run-queue time for that).
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "tern/io/chrome_trace.h"
#include "tern/runtime/executable.h"

namespace tern::bench {

struct CommOverlap {
  int64_t train_steps = 0;  // "train_step" scopes in the trace
  int64_t comm_events = 0;
  double comm_seconds = 0;      // all-reduce time on the reducer thread
  double compute_seconds = 0;   // main-thread op time outside all_reduce_wait
  double wait_seconds = 0;      // main-thread all_reduce_wait time
  double backward_seconds = 0;  // main-thread ops of the backward pass (nodes named "grad/...")
  double comm_under_compute_seconds = 0;
  double comm_under_wait_seconds = 0;
  double comm_under_start_seconds = 0;
  bool has_threads = false;  // comm and main events came from different threads
  double hidden_fraction() const {
    return comm_seconds > 0 ? comm_under_compute_seconds / comm_seconds : 0;
  }
  double exposed_fraction() const {
    return comm_seconds > 0 ? comm_under_wait_seconds / comm_seconds : 0;
  }
  double in_start_fraction() const {
    return comm_seconds > 0 ? comm_under_start_seconds / comm_seconds : 0;
  }
};

// Total length of the intersection of [a0, a1) with the sorted, disjoint intervals `b`.
inline int64_t overlap_ns(int64_t a0, int64_t a1,
                          const std::vector<std::pair<int64_t, int64_t>>& b) {
  auto it = std::lower_bound(b.begin(), b.end(), std::make_pair(a0, int64_t{0}),
                             [](const auto& x, const auto& y) { return x.second <= y.first; });
  int64_t total = 0;
  for (; it != b.end() && it->first < a1; ++it)
    total += std::max<int64_t>(0, std::min(a1, it->second) - std::max(a0, it->first));
  return total;
}

// `nodes`: node name -> StepInfo (train::compiled_nodes), to tell all_reduce_wait ops apart.
inline CommOverlap comm_overlap(const std::vector<io::TraceEvent>& events,
                                const std::map<std::string, runtime::StepInfo>& nodes) {
  CommOverlap r;
  int main_tid = -1;
  for (const io::TraceEvent& e : events) {
    if (e.category == "step" && e.name == "train_step") {
      main_tid = e.tid;
      ++r.train_steps;
    }
  }
  std::vector<std::pair<int64_t, int64_t>> compute, wait, start;
  std::vector<const io::TraceEvent*> comm;
  for (const io::TraceEvent& e : events) {
    if (e.category == "comm") {
      comm.push_back(&e);
      if (e.tid != main_tid) r.has_threads = true;
    } else if (e.category == "op" && e.tid == main_tid) {
      auto it = nodes.find(e.name);
      const std::string op = it == nodes.end() ? "" : it->second.op;
      if (op == "all_reduce_start") {
        start.push_back({e.start_ns, e.start_ns + e.duration_ns});
        continue;
      }
      const bool is_wait = op == "all_reduce_wait";
      (is_wait ? wait : compute).push_back({e.start_ns, e.start_ns + e.duration_ns});
      (is_wait ? r.wait_seconds : r.compute_seconds) += 1e-9 * static_cast<double>(e.duration_ns);
      if (e.name.rfind("grad/", 0) == 0)
        r.backward_seconds += 1e-9 * static_cast<double>(e.duration_ns);
    }
  }
  // Op scopes of one thread do not nest; sorted by start they are disjoint.
  std::sort(compute.begin(), compute.end());
  std::sort(wait.begin(), wait.end());
  std::sort(start.begin(), start.end());
  for (const io::TraceEvent* e : comm) {
    const int64_t a0 = e->start_ns, a1 = e->start_ns + e->duration_ns;
    ++r.comm_events;
    r.comm_seconds += 1e-9 * static_cast<double>(e->duration_ns);
    r.comm_under_compute_seconds += 1e-9 * static_cast<double>(overlap_ns(a0, a1, compute));
    r.comm_under_wait_seconds += 1e-9 * static_cast<double>(overlap_ns(a0, a1, wait));
    r.comm_under_start_seconds += 1e-9 * static_cast<double>(overlap_ns(a0, a1, start));
  }
  return r;
}

}  // namespace tern::bench
