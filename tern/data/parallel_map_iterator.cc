// ParallelMapIterator: ordered or unordered parallel map over a thread pool.
#include "tern/data/parallel_map_iterator.h"

#include <algorithm>

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
  quiesce(lock);
}

void ParallelMapIterator::quiesce(std::unique_lock<std::mutex>& lock) {
  cv_.wait(lock, [this] { return in_flight_ == 0; });
}

void ParallelMapIterator::fill() {
  for (;;) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      const int64_t p = parallelism_.value();
      if (input_done_ || in_flight_ >= p || static_cast<int64_t>(slots_.size()) >= 2 * p) return;
    }
    auto slot = std::make_shared<Slot>();
    std::optional<Element> in;
    try {
      in = input_->next();
    } catch (...) {
      // Delivered after the results ahead of it; the next fill() reads on.
      slot->done = true;
      slot->result.error = std::current_exception();
      std::lock_guard<std::mutex> lock(mu_);
      slots_.push_back(std::move(slot));
      return;
    }
    if (!in) {
      input_done_ = true;
      return;
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      slots_.push_back(slot);
      ++in_flight_;
    }
    pool_->schedule([this, slot, e = std::move(*in)]() mutable {
      BufferedResult result;
      try {
        TERN_TRACE_SCOPE("map_fn", "data");
        result.value = fn_(std::move(e));
      } catch (...) {
        result.error = std::current_exception();
      }
      std::lock_guard<std::mutex> lock(mu_);
      slot->result = std::move(result);
      slot->done = true;
      --in_flight_;
      cv_.notify_all();
    });
  }
}

std::optional<Element> ParallelMapIterator::get_next() {
  fill();
  std::unique_lock<std::mutex> lock(mu_);
  if (slots_.empty()) return std::nullopt;  // fill() stops early only when the input ended
  auto ready = [this] {
    if (deterministic_) return slots_.front()->done;
    return std::any_of(slots_.begin(), slots_.end(), [](const auto& s) { return s->done; });
  };
  const bool waited = !ready();
  if (waited) {
    const int64_t start = now_ns();
    cv_.wait(lock, ready);
    counters().wait_ns.fetch_add(now_ns() - start, std::memory_order_relaxed);
  }
  if (parallelism_.record(waited)) counters().tunable.store(parallelism_.value());
  auto it = deterministic_
                ? slots_.begin()
                : std::find_if(slots_.begin(), slots_.end(), [](const auto& s) { return s->done; });
  std::shared_ptr<Slot> slot = std::move(*it);
  slots_.erase(it);
  counters().buffered.store(static_cast<int64_t>(slots_.size()));
  lock.unlock();
  return slot->result.take();
}

void ParallelMapIterator::save_state(StateWriter& w) {
  std::unique_lock<std::mutex> lock(mu_);
  quiesce(lock);
  w.write_int("input_done", input_done_ ? 1 : 0);
  if (!input_done_) input_->save(w);
  w.write_int("buffered", static_cast<int64_t>(slots_.size()));
  for (const auto& slot : slots_) save_result(w, "result", slot->result);
}

void ParallelMapIterator::restore_state(StateReader& r) {
  std::unique_lock<std::mutex> lock(mu_);
  quiesce(lock);
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
