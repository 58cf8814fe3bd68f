// GradientReducer: bucket plan, persistent buffers and the communication thread.
#include "tern/dist/gradient_reducer.h"

#include <pthread.h>

#include <chrono>
#include <cstring>
#include <map>

#include "tern/base/trace.h"

namespace tern::dist {
namespace {

std::mutex& registry_mutex() {
  static std::mutex mu;
  return mu;
}

std::map<int64_t, GradientReducer*>& registry() {
  static std::map<int64_t, GradientReducer*> reducers;
  return reducers;
}

int64_t next_id() {
  static int64_t id = 0;
  return ++id;
}

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace

std::vector<Bucket> plan_buckets(const std::vector<TensorType>& grads,
                                 const BucketOptions& options) {
  TERN_CHECK_ARG(options.first_bucket_bytes > 0 && options.bucket_bytes > 0,
                 "bucket sizes must be positive");
  std::vector<Bucket> buckets;
  // One open bucket per dtype; the first bucket of all has the small cap.
  std::map<DType, size_t> open;
  for (size_t i = 0; i < grads.size(); ++i) {
    const TensorType& t = grads[i];
    const size_t bytes = static_cast<size_t>(t.shape.num_elements()) * dtype_size(t.dtype);
    auto it = open.find(t.dtype);
    if (it != open.end()) {
      Bucket& b = buckets[it->second];
      const size_t cap = it->second == 0 ? options.first_bucket_bytes : options.bucket_bytes;
      const size_t used = static_cast<size_t>(b.elements) * dtype_size(b.dtype);
      if (used > 0 && used + bytes > cap) open.erase(it), it = open.end();
    }
    if (it == open.end()) {
      buckets.push_back(Bucket{t.dtype, {}, {}, 0});
      it = open.insert_or_assign(t.dtype, buckets.size() - 1).first;
    }
    Bucket& b = buckets[it->second];
    b.members.push_back(static_cast<int>(i));
    b.offsets.push_back(b.elements);
    b.elements += t.shape.num_elements();
  }
  return buckets;
}

GradientReducer::GradientReducer(std::shared_ptr<Communicator> comm, std::vector<TensorType> grads,
                                 BucketOptions options)
    : comm_(std::move(comm)), grads_(std::move(grads)), options_(options) {
  TERN_CHECK_ARG(comm_ != nullptr, "GradientReducer: no communicator");
  for (const TensorType& t : grads_) {
    if (t.dtype != DType::kF32 && t.dtype != DType::kF64) {
      throw_error(ErrorCode::kInvalidArgument, "data-parallel training all-reduces f32 and f64 ",
                  "gradients; got a gradient of type ", t.to_string());
    }
  }
  register_collective_ops();
  buckets_ = plan_buckets(grads_, options_);
  views_.resize(grads_.size());
  size_t largest = 0;
  for (size_t b = 0; b < buckets_.size(); ++b) {
    const Bucket& bucket = buckets_[b];
    const size_t bytes = static_cast<size_t>(bucket.elements) * dtype_size(bucket.dtype);
    largest = std::max(largest, bytes);
    auto storage = Storage::allocate(std::max<size_t>(bytes, 1));
    std::memset(storage->data(), 0, std::max<size_t>(bytes, 1));
    for (size_t m = 0; m < bucket.members.size(); ++m) {
      const int g = bucket.members[m];
      const TensorType& t = grads_[static_cast<size_t>(g)];
      views_[static_cast<size_t>(g)] = Tensor(
          t.dtype, t.shape, storage, static_cast<size_t>(bucket.offsets[m]) * dtype_size(t.dtype));
    }
    buffers_.push_back(std::move(storage));
    trace_names_.push_back(str_cat("all_reduce/bucket", b, " (", format_bytes(bytes), ")"));
  }
  comm_->reserve(largest);
  state_.assign(buckets_.size(), State::kIdle);
  {
    std::lock_guard<std::mutex> lock(registry_mutex());
    id_ = next_id();
    registry()[id_] = this;
  }
  thread_ = std::thread([this] { loop(); });
}

GradientReducer::~GradientReducer() {
  {
    std::lock_guard<std::mutex> lock(registry_mutex());
    registry().erase(id_);
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void GradientReducer::start(int bucket) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    State& s = state_.at(static_cast<size_t>(bucket));
    if (s != State::kIdle) {
      throw_error(ErrorCode::kInternal, "all_reduce_start: bucket ", bucket,
                  " started again before its all_reduce_wait");
    }
    s = State::kQueued;
    queue_.push_back(bucket);
  }
  cv_.notify_all();
}

void GradientReducer::wait(int bucket) {
  auto t0 = std::chrono::steady_clock::now();
  std::unique_lock<std::mutex> lock(mu_);
  State& s = state_.at(static_cast<size_t>(bucket));
  if (s == State::kIdle) {
    throw_error(ErrorCode::kInternal, "all_reduce_wait: bucket ", bucket, " was not started");
  }
  cv_.wait(lock, [&] { return s == State::kDone || error_ != nullptr; });
  stats_.exposed_seconds += seconds_since(t0);
  if (error_) std::rethrow_exception(error_);
  s = State::kIdle;
}

ReducerStats GradientReducer::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

void GradientReducer::reset_stats() {
  std::lock_guard<std::mutex> lock(mu_);
  stats_ = {};
}

void GradientReducer::loop() {
  // Named for traces, top and /proc (15 characters at most).
  pthread_setname_np(pthread_self(), "tern-allreduce");
  for (;;) {
    int b;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
      if (stop_) return;
      b = queue_.front();
      queue_.pop_front();
    }
    const Bucket& bucket = buckets_[static_cast<size_t>(b)];
    auto t0 = std::chrono::steady_clock::now();
    std::exception_ptr error;
    try {
      TERN_TRACE_SCOPE(trace_names_[static_cast<size_t>(b)], "comm");
      comm_->all_reduce_sum(buffers_[static_cast<size_t>(b)]->data(), bucket.elements, bucket.dtype,
                            options_.mode);
    } catch (...) {
      error = std::current_exception();
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      stats_.reduce_seconds += seconds_since(t0);
      stats_.bytes += bucket.elements * static_cast<int64_t>(dtype_size(bucket.dtype));
      ++stats_.reductions;
      state_[static_cast<size_t>(b)] = State::kDone;
      if (error && !error_) error_ = error;
    }
    cv_.notify_all();
  }
}

GradientReducer* find_reducer(int64_t id) {
  std::lock_guard<std::mutex> lock(registry_mutex());
  auto it = registry().find(id);
  return it == registry().end() ? nullptr : it->second;
}

}  // namespace tern::dist
