// Dynamic batching: queues of open batches, batch threads, concatenation and splitting along
// dim 0, padding to allowed batch sizes.
#include "tern/serve/batcher.h"

#include <algorithm>
#include <cstring>
#include <exception>
#include <optional>

#include "tern/base/logging.h"

namespace tern::serve {

struct Batcher::Task {
  const TensorMap* inputs = nullptr;
  int64_t size = 0;
  std::string queue_key;
  Clock::time_point enqueued;
  Clock::time_point deadline;
  bool started = false;  // taken by a batch thread
  bool done = false;
  TensorMap result;
  std::exception_ptr error;
};

namespace {

// --- rows along dim 0 ---

int64_t row_elements(const TensorValue& v) {
  int64_t n = 1;
  for (size_t i = 1; i < v.shape.size(); ++i) n *= v.shape[i];
  return n;
}

// The parts' rows one after another, then `pad` copies of the first row.
TensorValue concat_rows(const std::vector<const TensorValue*>& parts, int64_t pad) {
  const TensorValue& first = *parts.front();
  std::vector<int64_t> shape = first.shape;
  shape[0] = pad;
  for (const TensorValue* p : parts) shape[0] += p->shape[0];
  const int64_t row = row_elements(first);
  if (first.is_string()) {
    std::vector<std::string> strings;
    strings.reserve(static_cast<size_t>(shape[0] * row));
    for (const TensorValue* p : parts)
      strings.insert(strings.end(), p->strings.begin(), p->strings.end());
    for (int64_t i = 0; i < pad; ++i) {
      strings.insert(strings.end(), first.strings.begin(), first.strings.begin() + row);
    }
    return TensorValue::from_strings(std::move(shape), std::move(strings));
  }
  Tensor out(first.numbers.dtype(), Shape(shape));
  char* dst = static_cast<char*>(out.raw_data());
  for (const TensorValue* p : parts) {
    std::memcpy(dst, p->numbers.raw_data(), p->numbers.nbytes());
    dst += p->numbers.nbytes();
  }
  const size_t row_bytes = static_cast<size_t>(row) * dtype_size(first.numbers.dtype());
  for (int64_t i = 0; i < pad; ++i, dst += row_bytes) {
    std::memcpy(dst, first.numbers.raw_data(), row_bytes);
  }
  TensorValue v = TensorValue::from_tensor(std::move(out));
  v.dtype = first.dtype;
  return v;
}

TensorValue slice_rows(const TensorValue& v, int64_t begin, int64_t end) {
  std::vector<int64_t> shape = v.shape;
  shape[0] = end - begin;
  if (v.is_string()) {
    const int64_t row = row_elements(v);
    return TensorValue::from_strings(
        std::move(shape),
        std::vector<std::string>(v.strings.begin() + begin * row, v.strings.begin() + end * row));
  }
  TensorValue out = TensorValue::from_tensor(v.numbers.slice_rows(begin, end));
  out.dtype = v.dtype;
  return out;
}

// The request's size (its common dim 0) and a key of its layout: names, dtypes, dims after 0.
std::pair<int64_t, std::string> request_layout(const TensorMap& inputs) {
  TERN_CHECK_ARG(!inputs.empty(), "a batched request needs at least one input");
  std::optional<std::pair<std::string, int64_t>> first;
  std::string layout;
  for (const auto& [name, v] : inputs) {
    TERN_CHECK_ARG(!v.shape.empty(), "input '", name, "' is a scalar (", v.type_string(),
                   "): batching needs dim 0 (the batch) on every input");
    if (!first) first = {name, v.shape[0]};
    TERN_CHECK_ARG(v.shape[0] == first->second, "input '", name, "' has dim 0 = ", v.shape[0],
                   " but input '", first->first, "' has ", first->second,
                   ": every input of a request shares dim 0 (the batch)");
    TERN_CHECK_ARG(v.is_string() || v.numbers.defined(), "input '", name, "' holds no numbers");
    layout += str_cat(name, ":", static_cast<int>(v.dtype));
    for (size_t i = 1; i < v.shape.size(); ++i) layout += str_cat(",", v.shape[i]);
    layout += ";";
  }
  return {first->second, layout};
}

}  // namespace

// --- options ---

void validate_batching_options(const BatchingOptions& o, const std::string& source) {
  TERN_CHECK_ARG(o.max_batch_size > 0, source, ": max_batch_size must be positive, got ",
                 o.max_batch_size);
  TERN_CHECK_ARG(o.batch_timeout_micros >= 0, source, ": batch_timeout_micros must be >= 0, got ",
                 o.batch_timeout_micros);
  TERN_CHECK_ARG(o.num_batch_threads >= 0, source, ": num_batch_threads must be >= 0, got ",
                 o.num_batch_threads);
  TERN_CHECK_ARG(o.max_enqueued_batches > 0, source,
                 ": max_enqueued_batches must be positive, got ", o.max_enqueued_batches);
  const auto& sizes = o.allowed_batch_sizes;
  for (size_t i = 0; i < sizes.size(); ++i) {
    TERN_CHECK_ARG(sizes[i] > 0, source, ": allowed_batch_sizes[", i, "] = ", sizes[i],
                   " is not positive");
    TERN_CHECK_ARG(i == 0 || sizes[i] > sizes[i - 1], source,
                   ": allowed_batch_sizes must be increasing, but entry ", i, " (", sizes[i],
                   ") follows ", sizes[i - 1]);
  }
  TERN_CHECK_ARG(sizes.empty() || sizes.back() == o.max_batch_size, source,
                 ": last entry in allowed_batch_sizes (", sizes.empty() ? 0 : sizes.back(),
                 ") must match max_batch_size (", o.max_batch_size, ")");
}

// --- scheduling ---

Batcher::Batcher(BatchingOptions options, Observer observer)
    : options_(std::move(options)), observer_(std::move(observer)) {
  validate_batching_options(options_);
  int threads = options_.num_batch_threads;
  if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
  for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { thread_loop(); });
}

Batcher::~Batcher() {
  stop();
}

void Batcher::stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  work_cv_.notify_all();
  for (std::thread& t : threads_) {
    if (t.joinable()) t.join();
  }
}

int64_t Batcher::num_queued_requests() const {
  std::lock_guard<std::mutex> lock(mu_);
  int64_t n = 0;
  for (const auto& [key, q] : queues_) {
    for (const Batch& b : q.batches) n += static_cast<int64_t>(b.tasks.size());
  }
  return n;
}

TensorMap Batcher::run(const ServableHandle& handle, const std::string& signature,
                       const TensorMap& inputs, Clock::time_point deadline) {
  TERN_CHECK_ARG(handle.servable != nullptr, "batching: model '", handle.model_name, "' version ",
                 handle.version, " has no servable");
  auto [size, layout] = request_layout(inputs);
  TERN_CHECK_ARG(size <= options_.max_batch_size, "Task size ", size,
                 " is larger than maximum batch size ", options_.max_batch_size);
  if (size == 0) return handle.servable->run(signature, inputs);  // nothing to merge

  Task task;
  task.inputs = &inputs;
  task.size = size;
  task.deadline = deadline;
  task.queue_key =
      str_cat(static_cast<const void*>(handle.servable.get()), "|", signature, "|", layout);
  std::unique_lock<std::mutex> lock(mu_);
  if (stopping_) throw_error(ErrorCode::kUnavailable, "the batcher is stopped");
  task.enqueued = Clock::now();
  if (task.enqueued >= deadline) {
    throw_error(ErrorCode::kDeadlineExceeded, "the deadline passed before model '",
                handle.model_name, "' version ", handle.version, " was queued for batching");
  }
  Queue& q = queues_[task.queue_key];
  if (!q.servable) {
    q.servable = handle.servable;
    q.signature = signature;
    q.model_name = handle.model_name;
    q.version = handle.version;
  }
  if (q.batches.empty() || q.batches.back().size + size > options_.max_batch_size) {
    if (static_cast<int64_t>(q.batches.size()) >= options_.max_enqueued_batches) {
      throw_error(ErrorCode::kUnavailable,
                  "The batch scheduling queue to which this task was submitted is full");
    }
    q.batches.push_back(Batch{{}, 0, task.enqueued});
  }
  q.batches.back().tasks.push_back(&task);
  q.batches.back().size += size;
  work_cv_.notify_one();

  while (!task.done) {
    if (!task.started && Clock::now() >= deadline) {
      remove_queued(&task);
      throw_error(ErrorCode::kDeadlineExceeded, "the deadline passed while the request waited ",
                  "for a batch of model '", handle.model_name, "' version ", handle.version);
    }
    if (task.started || deadline == Clock::time_point::max()) {
      done_cv_.wait(lock);
    } else {
      done_cv_.wait_until(lock, deadline);
    }
  }
  if (task.error) std::rethrow_exception(task.error);
  return std::move(task.result);
}

void Batcher::remove_queued(Task* task) {
  auto qit = queues_.find(task->queue_key);
  if (qit == queues_.end()) return;
  auto& batches = qit->second.batches;
  for (auto b = batches.begin(); b != batches.end(); ++b) {
    auto t = std::find(b->tasks.begin(), b->tasks.end(), task);
    if (t == b->tasks.end()) continue;
    b->tasks.erase(t);
    b->size -= task->size;
    if (b->tasks.empty()) batches.erase(b);
    break;
  }
  if (batches.empty()) queues_.erase(qit);
}

std::map<std::string, Batcher::Queue>::iterator Batcher::next_ready(Clock::time_point now,
                                                                    Clock::time_point* wake) {
  *wake = Clock::time_point::max();
  const auto timeout = std::chrono::microseconds(options_.batch_timeout_micros);
  // Round-robin: start after the queue served last.
  auto start = queues_.upper_bound(last_key_);
  for (size_t i = 0; i < queues_.size(); ++i, ++start) {
    if (start == queues_.end()) start = queues_.begin();
    const Queue& q = start->second;
    const Batch& b = q.batches.front();
    if (stopping_ || q.batches.size() > 1 || b.size >= options_.max_batch_size ||
        timeout.count() == 0 || now >= b.opened + timeout) {
      return start;
    }
    *wake = std::min(*wake, b.opened + timeout);
  }
  return queues_.end();
}

void Batcher::thread_loop() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    if (stopping_ && queues_.empty()) return;
    Clock::time_point wake;
    auto it = next_ready(Clock::now(), &wake);
    if (it == queues_.end()) {
      if (wake == Clock::time_point::max()) {
        work_cv_.wait(lock);
      } else {
        work_cv_.wait_until(lock, wake);
      }
      continue;
    }
    last_key_ = it->first;
    Queue queue{
        it->second.servable, it->second.signature, it->second.model_name, it->second.version, {}};
    Batch batch = std::move(it->second.batches.front());
    it->second.batches.pop_front();
    if (it->second.batches.empty()) queues_.erase(it);
    for (Task* t : batch.tasks) t->started = true;
    lock.unlock();
    execute(queue, std::move(batch));
    lock.lock();
  }
}

// --- one batch ---

void Batcher::execute(const Queue& queue, Batch batch) {
  const Clock::time_point start = Clock::now();
  std::vector<Task*> live;
  BatchStats stats{queue.model_name, queue.version, 0, 0, {}};
  for (Task* t : batch.tasks) {
    if (start >= t->deadline) {
      t->error = std::make_exception_ptr(
          Error(ErrorCode::kDeadlineExceeded,
                str_cat("the deadline passed while the request waited for a batch of model '",
                        queue.model_name, "' version ", queue.version)));
      continue;
    }
    live.push_back(t);
    stats.input_size += t->size;
    stats.queuing.push_back(
        std::chrono::duration_cast<std::chrono::microseconds>(start - t->enqueued));
  }
  if (!live.empty()) {
    int64_t padded = stats.input_size;
    for (int64_t allowed : options_.allowed_batch_sizes) {
      if (allowed >= stats.input_size) {
        padded = allowed;
        break;
      }
    }
    stats.padded_size = padded;
    try {
      TensorMap merged;
      for (const auto& [name, v] : *live.front()->inputs) {
        std::vector<const TensorValue*> parts;
        for (Task* t : live) parts.push_back(&t->inputs->at(name));
        merged[name] = concat_rows(parts, padded - stats.input_size);
      }
      TensorMap outputs = queue.servable->run(queue.signature, merged);
      for (const auto& [name, v] : outputs) {
        if (v.shape.empty() || v.shape[0] != padded) {
          throw_error(ErrorCode::kInternal, "model '", queue.model_name, "' version ",
                      queue.version, " returned output '", name, "' as ", v.type_string(),
                      " for a batch of ", padded, " rows: batching needs dim 0 = the batch");
        }
      }
      int64_t row = 0;
      for (Task* t : live) {
        for (const auto& [name, v] : outputs) t->result[name] = slice_rows(v, row, row + t->size);
        row += t->size;
      }
    } catch (const std::exception& e) {
      // One copy per request: requests rethrow on their own threads.
      const Error* err = dynamic_cast<const Error*>(&e);
      for (Task* t : live) {
        t->error = std::make_exception_ptr(err ? Error(err->code(), err->message())
                                               : Error(ErrorCode::kInternal, e.what()));
      }
    }
  }
  // Metrics first, so that a request that returned is already counted.
  if (observer_ && !live.empty()) observer_(stats);
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (Task* t : batch.tasks) t->done = true;
  }
  done_cv_.notify_all();
}

}  // namespace tern::serve
