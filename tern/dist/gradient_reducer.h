// GradientReducer: the all-reduce of a data-parallel training step, by buckets.
//
// The compiled train step (tern/train/training_state.cc) knows at compile time which gradients
// exist and in which order backward produces them. plan_buckets() groups them, in that order,
// into buckets of one dtype (the first ~1 MiB so that the first all-reduce starts early, then
// ~25 MiB, as PyTorch DDP does). Each bucket is one persistent buffer; gradients are views into
// it, so backward's kernels write straight into the buffer (CompileOptions::pin). In the step,
// the op all_reduce_start(bucket) hands a finished bucket to the reducer's communication thread,
// which sums it across ranks while backward goes on; all_reduce_wait(bucket) blocks until that
// bucket is reduced, just before the optimizer update reads it (collective_ops.cc).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "tern/dist/communicator.h"
#include "tern/ir/graph.h"
#include "tern/tensor/tensor.h"

namespace tern::dist {

struct BucketOptions {
  size_t first_bucket_bytes = size_t{1} << 20;  // 1 MiB
  size_t bucket_bytes = size_t{25} << 20;       // 25 MiB
  ReduceMode mode = ReduceMode::kDeterministic;
};

struct Bucket {
  DType dtype = DType::kF32;
  std::vector<int> members;      // gradient indices, in the order backward produces them
  std::vector<int64_t> offsets;  // element offset of each member in the bucket buffer
  int64_t elements = 0;
};

// Gradients (in the order they become ready) grouped into buckets: consecutive gradients of one
// dtype until a bucket reaches its cap (a gradient larger than the cap gets a bucket of its own).
std::vector<Bucket> plan_buckets(const std::vector<TensorType>& grads,
                                 const BucketOptions& options);

struct ReducerStats {
  int64_t reductions = 0;      // bucket all-reduces run
  int64_t bytes = 0;           // bytes all-reduced
  double reduce_seconds = 0;   // time the communication thread spent in all-reduces
  double exposed_seconds = 0;  // time the step spent blocked in all_reduce_wait
};

class GradientReducer {
 public:
  GradientReducer(std::shared_ptr<Communicator> comm, std::vector<TensorType> grads,
                  BucketOptions options);
  ~GradientReducer();
  GradientReducer(const GradientReducer&) = delete;
  GradientReducer& operator=(const GradientReducer&) = delete;

  // The key the collective ops' `group` attribute carries (find_reducer).
  int64_t id() const { return id_; }
  const std::vector<Bucket>& buckets() const { return buckets_; }
  const std::vector<TensorType>& grads() const { return grads_; }
  const BucketOptions& options() const { return options_; }
  // Gradient i's place in its bucket's buffer.
  const Tensor& view(int grad) const { return views_.at(static_cast<size_t>(grad)); }
  // Where gradient i's elements go in its bucket's buffer (the collective kernels copy a
  // gradient that was not pinned there).
  void* data_of(int grad) { return views_.at(static_cast<size_t>(grad)).raw_data(); }

  // Hands bucket b to the communication thread.
  void start(int bucket);
  // Blocks until bucket b is reduced; rethrows the communication thread's error.
  void wait(int bucket);
  ReducerStats stats() const;
  void reset_stats();

 private:
  void loop();

  std::shared_ptr<Communicator> comm_;
  std::vector<TensorType> grads_;
  BucketOptions options_;
  int64_t id_;
  std::vector<Bucket> buckets_;
  std::vector<std::shared_ptr<Storage>> buffers_;
  std::vector<Tensor> views_;
  std::vector<std::string> trace_names_;

  enum class State { kIdle, kQueued, kDone };
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<int> queue_;
  std::vector<State> state_;
  std::exception_ptr error_;
  bool stop_ = false;
  ReducerStats stats_;
  std::thread thread_;
};

// The live reducer with this id (the collective kernels look theirs up when created).
GradientReducer* find_reducer(int64_t id);

// CompileOptions::pin for the collective ops: a gradient operand of all_reduce_start or
// all_reduce_wait is its view in the bucket buffer; anything else is not pinned (undefined).
Tensor bucket_operand(const ir::Node& node, bool is_output, int index);

// Registers the ops all_reduce_start / all_reduce_wait and their CPU kernels (once).
void register_collective_ops();

}  // namespace tern::dist
