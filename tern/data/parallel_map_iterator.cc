// ParallelMapIterator: self-scheduling workers with an ordered (or unordered) result buffer.
#include "tern/data/parallel_map_iterator.h"

#include <algorithm>
#include <functional>

#include "tern/base/error.h"
#include "tern/base/trace.h"

namespace tern::data {

ParallelMapIterator::ParallelMapIterator(const IteratorContext& parent, std::string_view name,
                                         const Dataset& input, const MapFn& fn,
                                         const MapOptions& options)
    : IteratorBase(parent, name),
      fn_(fn),
      deterministic_(options.deterministic),
      input_(input.make_stage_iterator(context())),
      parallelism_(options.num_parallel_calls == kAutotune,
                   options.num_parallel_calls == kAutotune ? 1 : options.num_parallel_calls,
                   options.num_parallel_calls == kAutotune ? available_cores()
                                                           : options.num_parallel_calls) {
  counters().tunable.store(parallelism_.value());
  pool_ = std::make_unique<ThreadPool>(static_cast<int>(parallelism_.cap()));
}

ParallelMapIterator::~ParallelMapIterator() {
  std::unique_lock<std::mutex> lock(mu_);
  cancelled_ = true;
  work_cv_.notify_all();
  ++waiters_;
  result_cv_.wait(lock, [this] { return running_ == 0; });
  --waiters_;
}

bool ParallelMapIterator::can_start_locked() const {
  const int64_t p = parallelism_.value();
  return !paused_ && !reading_input_ && !input_done_ && in_flight_ < p &&
         static_cast<int64_t>(slots_.size()) < 2 * p;
}

void ParallelMapIterator::worker_loop() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    work_cv_.wait(lock, [this] { return cancelled_ || can_start_locked(); });
    if (cancelled_) break;
    reading_input_ = true;
    ++in_flight_;
    lock.unlock();
    std::optional<Element> in;
    std::exception_ptr error;
    try {
      in = input_->next();
    } catch (...) {
      error = std::current_exception();
    }
    lock.lock();
    reading_input_ = false;
    if (error || !in) {
      if (error) {  // delivered in its place; reading goes on after it
        auto slot = std::make_shared<Slot>();
        slot->done = true;
        slot->result.error = error;
        slots_.push_back(std::move(slot));
      } else {
        input_done_ = true;
      }
      --in_flight_;
      work_cv_.notify_one();
      if (waiters_ > 0) result_cv_.notify_all();
      continue;
    }
    auto slot = std::make_shared<Slot>();
    slots_.push_back(slot);
    work_cv_.notify_one();  // another worker may read the next element now
    lock.unlock();
    BufferedResult result;
    try {
      TERN_TRACE_SCOPE("map_fn", "data");
      result.value = fn_(std::move(*in));
    } catch (...) {
      result.error = std::current_exception();
    }
    lock.lock();
    slot->result = std::move(result);
    slot->done = true;
    --in_flight_;
    if (waiters_ > 0) result_cv_.notify_all();
  }
  --running_;
  if (waiters_ > 0) result_cv_.notify_all();
}

std::optional<Element> ParallelMapIterator::get_next() {
  std::unique_lock<std::mutex> lock(mu_);
  if (!started_) {
    started_ = true;
    for (int i = 0; i < pool_->num_threads(); ++i) {
      ++running_;
      pool_->schedule([this] { worker_loop(); });
    }
  }
  auto ready = [this] {
    if (slots_.empty()) return input_done_;
    if (deterministic_) return slots_.front()->done;
    return std::any_of(slots_.begin(), slots_.end(), [](const auto& s) { return s->done; });
  };
  const bool waited = !ready();
  if (waited) {
    const int64_t start = now_ns();
    ++waiters_;
    result_cv_.wait(lock, ready);
    --waiters_;
    counters().wait_ns.fetch_add(now_ns() - start, std::memory_order_relaxed);
  }
  if (parallelism_.record(waited)) {
    counters().tunable.store(parallelism_.value());
    work_cv_.notify_all();
  }
  if (slots_.empty()) return std::nullopt;  // input_done_
  auto it = deterministic_
                ? slots_.begin()
                : std::find_if(slots_.begin(), slots_.end(), [](const auto& s) { return s->done; });
  std::shared_ptr<Slot> slot = std::move(*it);
  slots_.erase(it);
  counters().buffered.store(static_cast<int64_t>(slots_.size()));
  work_cv_.notify_one();  // room for one more
  lock.unlock();
  return slot->result.take();
}

void ParallelMapIterator::quiesce(std::unique_lock<std::mutex>& lock) {
  paused_ = true;
  ++waiters_;
  result_cv_.wait(lock, [this] { return in_flight_ == 0 && !reading_input_; });
  --waiters_;
}

void ParallelMapIterator::unpause(std::unique_lock<std::mutex>& lock) {
  (void)lock;
  paused_ = false;
  work_cv_.notify_all();
}

namespace {

// Unpauses when leaving scope, also on errors.
struct Unpauser {
  std::function<void()> fn;
  ~Unpauser() { fn(); }
};

}  // namespace

void ParallelMapIterator::save_state(StateWriter& w) {
  std::unique_lock<std::mutex> lock(mu_);
  quiesce(lock);
  Unpauser unpauser{[&] { unpause(lock); }};
  w.write_int("input_done", input_done_ ? 1 : 0);
  if (!input_done_) input_->save(w);
  w.write_int("buffered", static_cast<int64_t>(slots_.size()));
  for (const auto& slot : slots_) save_result(w, "result", slot->result);
}

void ParallelMapIterator::restore_state(StateReader& r) {
  std::unique_lock<std::mutex> lock(mu_);
  quiesce(lock);
  Unpauser unpauser{[&] { unpause(lock); }};
  slots_.clear();
  input_done_ = r.read_int("input_done") != 0;
  if (!input_done_) input_->restore(r);
  const int64_t n = r.read_int("buffered");
  TERN_CHECK_ARG(n >= 0, "iterator state: parallel map buffered count ", n);
  for (int64_t i = 0; i < n; ++i) {
    auto slot = std::make_shared<Slot>();
    slot->done = true;
    slot->result = restore_result(r, "result");
    slots_.push_back(std::move(slot));
  }
}

}  // namespace tern::data
