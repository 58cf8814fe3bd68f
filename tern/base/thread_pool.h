// A small fixed-size thread pool for host work that is not intra-op math (the input pipeline),
// and parallel_for for one-off host loops (data conversion). Intra-op parallelism uses OpenMP, as
// oneDNN does; this pool stays small to avoid oversubscription.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace tern {

// The most threads tern starts for one pool or one OpenMP team. Thread counts come from configs
// and flags; far above the core count they only cost memory, and at 10^5 libgomp's per-thread
// stack data overflowed (SIGSEGV) and a pool that could not start every thread aborted
// (bad-input report F3). Readers of configs and flags reject larger counts, naming the key.
constexpr int64_t kMaxThreads = 1024;

// "" if n is a count of threads tern starts (1..kMaxThreads; 0 = all cores where `zero_ok`;
// -1 = AUTOTUNE where `autotune_ok`), else what is allowed and that n is not:
// "must be 0 (all cores) or 1..1024 (this machine has 2 cores), got 100000".
std::string thread_count_problem(int64_t n, bool zero_ok, bool autotune_ok = false);

class ThreadPool {
 public:
  // InvalidArgument if num_threads > kMaxThreads; ResourceExhausted if the system refuses a
  // thread (the ones already started are stopped and joined first).
  explicit ThreadPool(int num_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  void schedule(std::function<void()> task);
  int num_threads() const { return static_cast<int>(workers_.size()); }

 private:
  void worker_loop();
  void stop_and_join();

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> tasks_;
  bool stopping_ = false;
  std::vector<std::thread> workers_;
};

// Number of cores available to this process (sched affinity aware).
int available_cores();

// Runs fn(i) for every i in [0, n) on up to `max_threads` threads (0: available_cores()), the
// calling thread included; indices are handed out one at a time. The first exception thrown by
// any fn(i) stops the hand-out and is rethrown here once every thread has finished; indices not
// yet started are skipped.
void parallel_for(int64_t n, const std::function<void(int64_t)>& fn, int max_threads = 0);

}  // namespace tern
