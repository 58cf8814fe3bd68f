// PrefetchDataset: a bounded producer/consumer buffer on a background thread.
#include "tern/data/prefetch_dataset.h"

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include "tern/base/error.h"
#include "tern/base/thread_pool.h"
#include "tern/base/trace.h"
#include "tern/data/autotune.h"
#include "tern/data/buffered_result.h"
#include "tern/data/iterator_base.h"

namespace tern::data {
namespace {

class PrefetchDataset : public Dataset {
 public:
  PrefetchDataset(DatasetPtr input, int64_t buffer_size)
      : input_(std::move(input)), buffer_size_(buffer_size) {
    TERN_CHECK_ARG(input_ != nullptr, "prefetch: null input dataset");
    TERN_CHECK_ARG(buffer_size >= 1 || buffer_size == kAutotune,
                   "prefetch: buffer_size must be >= 1 or kAutotune, got ", buffer_size);
  }
  std::string name() const override { return "Prefetch"; }
  int64_t cardinality() const override { return input_->cardinality(); }
  std::unique_ptr<IteratorBase> make_stage_iterator(const IteratorContext& parent) const override;

  const DatasetPtr input_;
  const int64_t buffer_size_;
};

class PrefetchIterator : public IteratorBase {
 public:
  PrefetchIterator(const IteratorContext& parent, const PrefetchDataset& ds)
      : IteratorBase(parent, ds.name()),
        input_(ds.input_->make_stage_iterator(context())),
        depth_(ds.buffer_size_ == kAutotune, ds.buffer_size_ == kAutotune ? 1 : ds.buffer_size_,
               ds.buffer_size_ == kAutotune ? std::max<int64_t>(2, available_cores())
                                            : ds.buffer_size_) {
    counters().tunable.store(depth_.value());
  }
  ~PrefetchIterator() override { stop(); }

 protected:
  std::optional<Element> get_next() override {
    std::unique_lock<std::mutex> lock(mu_);
    if (!thread_.joinable() && !producer_finished_) {
      thread_ = std::thread([this] { produce(); });
    }
    const bool waited = buffer_.empty();
    if (waited) {
      const int64_t start = now_ns();
      cv_.wait(lock, [this] { return !buffer_.empty(); });
      counters().wait_ns.fetch_add(now_ns() - start, std::memory_order_relaxed);
    }
    if (depth_.record(waited)) counters().tunable.store(depth_.value());
    if (buffer_.front().end) return std::nullopt;  // the end marker stays for later calls
    BufferedResult r = std::move(buffer_.front());
    buffer_.pop_front();
    counters().buffered.store(static_cast<int64_t>(buffer_.size()));
    cv_.notify_all();
    lock.unlock();
    return r.take();
  }

  void save_state(StateWriter& w) override {
    stop();
    w.write_int("producer_finished", producer_finished_ ? 1 : 0);
    if (!producer_finished_) input_->save(w);
    w.write_int("buffered", static_cast<int64_t>(buffer_.size()));
    for (const BufferedResult& r : buffer_) save_result(w, "result", r);
  }

  void restore_state(StateReader& r) override {
    stop();
    buffer_.clear();
    producer_finished_ = r.read_int("producer_finished") != 0;
    if (!producer_finished_) input_->restore(r);
    const int64_t n = r.read_int("buffered");
    TERN_CHECK_ARG(n >= 0, "iterator state: prefetch buffered count ", n);
    for (int64_t i = 0; i < n; ++i) buffer_.push_back(restore_result(r, "result"));
  }

 private:
  void produce() {
    for (;;) {
      {
        std::unique_lock<std::mutex> lock(mu_);
        if (static_cast<int64_t>(buffer_.size()) >= depth_.value() && !stop_) {
          const int64_t start = now_ns();
          cv_.wait(lock, [this] {
            return stop_ || static_cast<int64_t>(buffer_.size()) < depth_.value();
          });
          counters().producer_wait_ns.fetch_add(now_ns() - start, std::memory_order_relaxed);
        }
        if (stop_) return;
      }
      BufferedResult r;
      try {
        std::optional<Element> e = input_->next();
        if (e) {
          r.value = std::move(e);
        } else {
          r.end = true;
        }
      } catch (...) {
        r.error = std::current_exception();
      }
      std::lock_guard<std::mutex> lock(mu_);
      const bool end = r.end;
      buffer_.push_back(std::move(r));
      counters().buffered.store(static_cast<int64_t>(buffer_.size()));
      cv_.notify_all();
      if (end) {
        producer_finished_ = true;
        return;
      }
    }
  }

  // Stops and joins the producer; the next get_next() starts a new one.
  void stop() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = false;
  }

  std::unique_ptr<IteratorBase> input_;
  AutotuneKnob depth_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<BufferedResult> buffer_;
  bool stop_ = false;
  bool producer_finished_ = false;  // the end marker is in the buffer
  std::thread thread_;
};

std::unique_ptr<IteratorBase> PrefetchDataset::make_stage_iterator(
    const IteratorContext& parent) const {
  return std::make_unique<PrefetchIterator>(parent, *this);
}

}  // namespace

DatasetPtr make_prefetch_dataset(DatasetPtr input, int64_t buffer_size) {
  return std::make_shared<PrefetchDataset>(std::move(input), buffer_size);
}

}  // namespace tern::data
