// ThreadPool, core count and parallel_for.
#include "tern/base/thread_pool.h"

#include <sched.h>

#include <algorithm>
#include <atomic>
#include <exception>
#include <system_error>

#include "tern/base/error.h"

namespace tern {

std::string thread_count_problem(int64_t n, bool zero_ok, bool autotune_ok) {
  if ((n >= 1 && n <= kMaxThreads) || (n == 0 && zero_ok) || (n == -1 && autotune_ok)) return "";
  return str_cat("must be ", autotune_ok ? "-1 (AUTOTUNE), " : "",
                 zero_ok ? "0 (all cores) or " : "", "1..", kMaxThreads, " (this machine has ",
                 available_cores(), " cores), got ", n);
}

ThreadPool::ThreadPool(int num_threads) {
  if (num_threads < 1) num_threads = 1;
  if (num_threads > kMaxThreads) {
    throw_error(ErrorCode::kInvalidArgument, "ThreadPool: ", num_threads,
                " threads is more than the ", kMaxThreads, " tern starts");
  }
  workers_.reserve(static_cast<size_t>(num_threads));
  for (int i = 0; i < num_threads; ++i) {
    try {
      workers_.emplace_back([this] { worker_loop(); });
    } catch (const std::system_error& e) {
      stop_and_join();  // destroying a joinable std::thread would call std::terminate
      throw_error(ErrorCode::kResourceExhausted, "ThreadPool: cannot start thread ", i + 1, " of ",
                  num_threads, ": ", e.what());
    }
  }
}

ThreadPool::~ThreadPool() {
  stop_and_join();
}

void ThreadPool::stop_and_join() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  for (auto& t : workers_) {
    if (t.joinable()) t.join();
  }
}

void ThreadPool::schedule(std::function<void()> task) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    tasks_.push_back(std::move(task));
  }
  cv_.notify_one();
}

void ThreadPool::worker_loop() {
  for (;;) {
    std::function<void()> task;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return stopping_ || !tasks_.empty(); });
      if (tasks_.empty()) return;
      task = std::move(tasks_.front());
      tasks_.pop_front();
    }
    task();
  }
}

int available_cores() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    int n = CPU_COUNT(&set);
    if (n > 0) return n;
  }
  unsigned n = std::thread::hardware_concurrency();
  return n > 0 ? static_cast<int>(n) : 1;
}

void parallel_for(int64_t n, const std::function<void(int64_t)>& fn, int max_threads) {
  if (n <= 0) return;
  const int cap = max_threads > 0 ? max_threads : available_cores();
  const int threads = static_cast<int>(std::min<int64_t>(std::max(1, cap), n));
  std::atomic<int64_t> next{0};
  std::exception_ptr error;
  std::mutex mu;
  auto work = [&] {
    for (int64_t i; (i = next.fetch_add(1)) < n;) {
      try {
        fn(i);
      } catch (...) {
        std::lock_guard<std::mutex> lock(mu);
        if (!error) error = std::current_exception();
        next = n;
      }
    }
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) pool.emplace_back(work);
  work();
  for (std::thread& t : pool) t.join();
  if (error) std::rethrow_exception(error);
}

}  // namespace tern
