// IteratorBase: the per-stage iterator every dataset implements (next, save, restore), and the
// context a parent hands to the iterators it creates (stage path, epoch key, statistics).
#pragma once

#include <cstdint>
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

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

// The rows of an in-memory source (from_tensor_slices): component k of row i is row i of
// components[k]. A stage that yields such rows unchanged (the source itself, a shuffle over it)
// can hand out row numbers instead of Elements, and batch then copies each row straight into the
// batch: no Element, tensor view or stage call per row (next_rows()).
struct RowTable {
  const Element* components = nullptr;
  int32_t file = -1;  // origin of row i: record first + i * stride of `file`, or element
  int64_t first = 0;  // first + i * stride when there is no file
  int64_t stride = 1;

  SourcePosition position(int64_t row) const {
    const int64_t index = first + row * stride;
    return file < 0 ? SourcePosition::element(index) : SourcePosition::record(file, index);
  }
  // Row `row` as an Element of views, with its origin (what next() returns for it).
  Element element(int64_t row) const;
};

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

  // Non-null when this stage can, from now on, hand out row numbers of the table instead of
  // elements (next_rows()); it may become null later (a restored shuffle), never non-null again.
  virtual const RowTable* row_table() const { return nullptr; }
  // Up to `n` row numbers of row_table(), the rows next() would have returned one by one, in
  // order, appended to `rows`; fewer only at the end. Statistics and tracing as for next().
  // Requires row_table() != nullptr.
  int64_t next_rows(int64_t n, std::vector<int64_t>& rows);

  const IteratorContext& context() const { return ctx_; }
  StageCounters& counters() { return *counters_; }

 protected:
  virtual std::optional<Element> get_next() = 0;
  // next_rows() without the statistics; only stages with a row_table() override it.
  virtual int64_t get_next_rows(int64_t n, std::vector<int64_t>& rows);
  virtual void save_state(StateWriter& w) = 0;
  virtual void restore_state(StateReader& r) = 0;

 private:
  // The statistics around one next() / next_rows() call: its start time, then its end and how
  // many elements it produced.
  int64_t begin_call();
  void end_call(int64_t start, int64_t produced);

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
