// DataParallel: what a distributed fit needs besides the model: the communicator, the options of
// the [distribute] config section, the gradient reducer of the compiled train steps and the
// watchdog. Semantics follow Keras' MirroredStrategy: the batch the user asks for is the global
// batch, each of the N workers trains on 1/N of it, gradients are summed over workers (each
// worker's loss is scaled by 1/N, so the sum is the global mean), and every worker applies the
// same update.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "tern/dist/communicator.h"
#include "tern/dist/gradient_reducer.h"

namespace tern::dist {

struct DataParallelOptions {
  BucketOptions buckets;
  // No progress for this long aborts the job; 0 = max(30 s, 10x the median step time).
  double watchdog_seconds = 0;
};

// Aborts the job (Communicator::abort, exit code 124) when the owner stops calling progress() for
// longer than the timeout: a frozen or deadlocked rank makes every other rank block in a
// collective, and MPI has no timeout of its own.
class Watchdog {
 public:
  // timeout_seconds 0: max(30 s, 10x the median interval between progress() calls).
  Watchdog(std::shared_ptr<Communicator> comm, double timeout_seconds);
  ~Watchdog();
  void progress(const char* where);
  // Paused watchdogs never fire (long single-rank work that every rank knows about).
  void pause();
  void resume();
  double timeout_seconds() const;

 private:
  void loop();

  std::shared_ptr<Communicator> comm_;
  double fixed_timeout_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::chrono::steady_clock::time_point last_;
  const char* where_ = "start-up";
  std::vector<double> intervals_;  // recent progress intervals (seconds)
  int paused_ = 1;                 // created paused: fit() resumes it while it trains
  bool stop_ = false;
  std::thread thread_;
};

class DataParallel {
 public:
  DataParallel(std::shared_ptr<Communicator> comm, DataParallelOptions options);
  ~DataParallel();

  Communicator& comm() { return *comm_; }
  int rank() const { return comm_->rank(); }
  int size() const { return comm_->size(); }
  bool is_chief() const { return comm_->rank() == 0; }
  const DataParallelOptions& options() const { return options_; }

  // The reducer for gradients of these types in this ready order: made on first use, shared by
  // every compiled train step of the model (the last partial batch has a step of its own).
  GradientReducer& reducer(const std::vector<TensorType>& grads);
  GradientReducer* reducer_if_any() { return reducer_.get(); }
  Watchdog& watchdog();

 private:
  std::shared_ptr<Communicator> comm_;
  DataParallelOptions options_;
  std::unique_ptr<GradientReducer> reducer_;
  std::unique_ptr<Watchdog> watchdog_;
};

// Per-rank blobs (each worker's data iterator position) packed into one, for a checkpoint that
// rank 0 writes for all; unpack checks the magic and the count, naming `what` in errors.
std::string pack_rank_blobs(const std::vector<std::string>& blobs);
std::vector<std::string> unpack_rank_blobs(const std::string& packed, const std::string& what);
bool is_packed_rank_blobs(const std::string& blob);

}  // namespace tern::dist
