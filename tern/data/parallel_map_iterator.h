// ParallelMapIterator: runs a map function on worker threads. The consumer's next() reads input
// elements (on its own thread) and hands them to the pool, keeping up to `parallelism` calls in
// flight and at most twice that many results buffered; it returns results in input order, or the
// first finished one when not deterministic. Input and function errors are delivered in order.
// Saving waits for in-flight calls and stores the finished results with the input's position.
#pragma once

#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>

#include "tern/base/thread_pool.h"
#include "tern/data/autotune.h"
#include "tern/data/buffered_result.h"
#include "tern/data/dataset.h"
#include "tern/data/iterator_base.h"

namespace tern::data {

class ParallelMapIterator : public IteratorBase {
 public:
  // `fn` must outlive the iterator (the dataset owns it).
  ParallelMapIterator(const IteratorContext& parent, std::string_view name, const Dataset& input,
                      const MapFn& fn, const MapOptions& options);
  ~ParallelMapIterator() override;

 protected:
  std::optional<Element> get_next() override;
  void save_state(StateWriter& w) override;
  void restore_state(StateReader& r) override;

 private:
  struct Slot {
    bool done = false;
    BufferedResult result;
  };

  // Reads input and schedules calls until the buffer is full or the input ends.
  void fill();
  // Blocks until no call is in flight.
  void quiesce(std::unique_lock<std::mutex>& lock);

  const MapFn& fn_;
  const bool deterministic_;
  std::unique_ptr<IteratorBase> input_;
  bool input_done_ = false;
  AutotuneKnob parallelism_;

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<Slot>> slots_;  // in input order
  int64_t in_flight_ = 0;
  // Last member: destroyed (workers joined) before anything they touch.
  std::unique_ptr<ThreadPool> pool_;
};

}  // namespace tern::data
