// Dynamic batching (TF Serving's SharedBatchScheduler + BatchingSession, §3 of SERVING.md): one
// queue per (servable version, signature, input layout); a request's inputs are concatenated along
// dim 0 with other requests' into the queue's open batch; a batch closes when it is full or
// batch_timeout_micros after its first request; num_batch_threads threads run closed batches,
// round-robin over queues; the outputs are split back per request. Batches are padded (by
// repeating their first row) up to the next allowed_batch_sizes entry.
//
// Errors: a request larger than max_batch_size is InvalidArgument; a queue holding
// max_enqueued_batches batches whose open batch cannot take the request is Unavailable; a request
// whose deadline passes while queued is DeadlineExceeded; a servable's error reaches every request
// of its batch. It does not split large requests or pad variable-length inputs.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "tern/serve/backend.h"

namespace tern::serve {

// TF Serving's BatchingParameters, with the scheduler's defaults.
struct BatchingOptions {
  int64_t max_batch_size = 1000;
  int64_t batch_timeout_micros = 0;
  int num_batch_threads = 0;  // 0: the number of hardware threads
  int64_t max_enqueued_batches = 10;
  std::vector<int64_t> allowed_batch_sizes;  // empty: any size; else increasing, last = max
  std::string thread_pool_name = "model_server_batch_threads";  // a metrics label
};

// InvalidArgument naming `source` and the field: max_batch_size, max_enqueued_batches not
// positive; batch_timeout_micros, num_batch_threads negative; allowed_batch_sizes not positive and
// increasing, or whose last entry is not max_batch_size.
void validate_batching_options(const BatchingOptions& options,
                               const std::string& source = "batching parameters");

// What one executed batch reports (for the batching metrics).
struct BatchStats {
  std::string model_name;
  int64_t version = 0;
  int64_t input_size = 0;                          // rows the requests brought
  int64_t padded_size = 0;                         // rows run (input_size + padding)
  std::vector<std::chrono::microseconds> queuing;  // per request: enqueued -> its batch started
};

class Batcher {
 public:
  using Observer = std::function<void(const BatchStats&)>;

  // Validates `options` and starts the batch threads. `observer` (optional) is called on a batch
  // thread after every batch.
  explicit Batcher(BatchingOptions options, Observer observer = {});
  ~Batcher();  // stop()
  Batcher(const Batcher&) = delete;
  Batcher& operator=(const Batcher&) = delete;

  // Runs `inputs` (every input shares dim 0, the request's size) batched with other requests on
  // handle.servable's `signature`; blocks until this request's rows of every output are back.
  TensorMap run(const ServableHandle& handle, const std::string& signature, const TensorMap& inputs,
                Clock::time_point deadline = Clock::time_point::max());

  // Runs every queued batch, then joins the threads; later run() calls are Unavailable.
  void stop();

  const BatchingOptions& options() const { return options_; }
  // Requests waiting in queues (not yet taken by a batch thread).
  int64_t num_queued_requests() const;

 private:
  struct Task;
  struct Batch {
    std::vector<Task*> tasks;
    int64_t size = 0;
    Clock::time_point opened;
  };
  struct Queue {
    ServablePtr servable;
    std::string signature;
    std::string model_name;
    int64_t version = 0;
    std::deque<Batch> batches;  // front: the oldest; back: the open one
  };

  void thread_loop();
  // A queue whose front batch may run now (round-robin); queues_.end() if none, and the earliest
  // time an open batch times out in `wake`.
  std::map<std::string, Queue>::iterator next_ready(Clock::time_point now, Clock::time_point* wake);
  void execute(const Queue& queue, Batch batch);
  void remove_queued(Task* task);  // under mu_

  BatchingOptions options_;
  Observer observer_;
  mutable std::mutex mu_;
  std::condition_variable work_cv_;  // a batch became ready, or stop
  std::condition_variable done_cv_;  // a task finished
  std::map<std::string, Queue> queues_;
  std::string last_key_;  // the queue served last (round-robin)
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace tern::serve
