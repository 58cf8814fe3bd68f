// A small fixed-size thread pool for host work that is not intra-op math (the input pipeline).
// Intra-op parallelism uses OpenMP, as oneDNN does; this pool stays small to avoid
// oversubscription.
#pragma once

#include <condition_variable>
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

}  // namespace tern
