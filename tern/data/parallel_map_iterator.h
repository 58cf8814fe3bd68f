// ParallelMapIterator: runs a map function on a private pool of worker threads. Each worker
// loops: take the input-reading role (one reader at a time, so input order is kept), read one
// element, append its result slot, then call the function outside any lock. At most
// `parallelism` calls run at once and at most twice that many results wait for the consumer;
// workers only sleep when there is no room, so a busy pipeline costs no wake-ups per element.
// Results come back in input order, or first-finished when not deterministic; input and
// function errors are delivered in their place. Saving pauses the workers, waits for running
// calls and stores the finished results with the input's position.
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

  void worker_loop();
  // With mu_ held: whether a worker may take the reading role and start a call.
  bool can_start_locked() const;
  // Pauses the workers and blocks until no call runs and no one reads input.
  void quiesce(std::unique_lock<std::mutex>& lock);
  void unpause(std::unique_lock<std::mutex>& lock);

  const MapFn& fn_;
  const bool deterministic_;
  std::unique_ptr<IteratorBase> input_;
  AutotuneKnob parallelism_;

  std::mutex mu_;
  std::condition_variable result_cv_;        // the consumer / quiesce wait here
  std::condition_variable work_cv_;          // idle workers wait here
  std::deque<std::shared_ptr<Slot>> slots_;  // in input order
  bool input_done_ = false;
  bool reading_input_ = false;  // a worker holds the reading role
  int64_t in_flight_ = 0;       // workers reading or computing
  bool paused_ = false;         // saving or restoring
  bool cancelled_ = false;      // shutting down
  bool started_ = false;
  int64_t running_ = 0;  // worker loops scheduled and not yet exited
  int waiters_ = 0;      // threads blocked on result_cv_
  // Last member: destroyed (threads joined) before anything the workers touch.
  std::unique_ptr<ThreadPool> pool_;
};

}  // namespace tern::data
