// A small fixed-size thread pool for host work that is not intra-op math (the input pipeline),
// and parallel_for for one-off host loops (data conversion). Intra-op parallelism uses OpenMP, as
// oneDNN does; this pool stays small to avoid oversubscription.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace tern {

class ThreadPool {
 public:
  explicit ThreadPool(int num_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  void schedule(std::function<void()> task);
  int num_threads() const { return static_cast<int>(workers_.size()); }

 private:
  void worker_loop();

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
