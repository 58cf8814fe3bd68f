// IteratorBase: the per-stage iterator every dataset implements (next, save, restore), and the
// context a parent hands to the iterators it creates (stage path, epoch key, statistics).
#pragma once

#include <cstdint>
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "tern/data/element.h"
#include "tern/data/iterator_state.h"
#include "tern/data/pipeline_stats.h"

namespace tern::data {

struct IteratorContext {
  std::string stage;       // path of the stage that owns this context, "" at the root
  uint64_t epoch_key = 0;  // distinguishes repeat epochs; reshuffling shuffles mix it into seeds
  std::shared_ptr<PipelineStats> stats;

  // The context for input `index` of a stage with several inputs (zip, concatenate).
  IteratorContext branch(int64_t index) const;
  // The same context in another epoch.
  IteratorContext with_epoch(uint64_t epoch) const;
};

// Combines two 64-bit values into a well-mixed seed (splitmix64 finalizer).
uint64_t mix_seed(uint64_t a, uint64_t b);

class IteratorBase {
 public:
  // `parent` is the context of the stage that creates this iterator; `name` is this stage's name.
  IteratorBase(const IteratorContext& parent, std::string_view name);
  virtual ~IteratorBase() = default;
  IteratorBase(const IteratorBase&) = delete;
  IteratorBase& operator=(const IteratorBase&) = delete;

  // The next element, or nullopt at the end. Errors propagate as tern::Error; the iterator stays
  // usable afterwards (the failed element is dropped).
  std::optional<Element> next();
  // Writes / reads this stage's position (and its inputs') under a scope named after the stage.
  // Background work is quiesced first; it resumes on the next next().
  void save(StateWriter& w);
  void restore(StateReader& r);

  const IteratorContext& context() const { return ctx_; }
  StageCounters& counters() { return *counters_; }

 protected:
  virtual std::optional<Element> get_next() = 0;
  virtual void save_state(StateWriter& w) = 0;
  virtual void restore_state(StateReader& r) = 0;

 private:
  IteratorContext ctx_;
  std::string name_;
  StageCounters* counters_;
};

// Saves an input iterator that may already be gone (exhausted and released): a presence flag,
// then its state.
void save_optional_input(StateWriter& w, std::string_view key, IteratorBase* input);
// Reads the flag; if set, calls `make` to create the input and restores it; otherwise resets it.
template <typename Make>
void restore_optional_input(StateReader& r, std::string_view key,
                            std::unique_ptr<IteratorBase>& input, Make&& make) {
  if (r.read_int(key) != 0) {
    input = make();
    input->restore(r);
  } else {
    input.reset();
  }
}

}  // namespace tern::data
