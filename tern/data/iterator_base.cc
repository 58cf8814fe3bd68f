// IteratorBase: statistics and tracing around next(), scoped save/restore.
#include "tern/data/iterator_base.h"

#include "tern/base/trace.h"

namespace tern::data {

IteratorContext IteratorContext::branch(int64_t index) const {
  IteratorContext c = *this;
  c.stage += str_cat("[", index, "]");
  return c;
}

IteratorContext IteratorContext::with_epoch(uint64_t epoch) const {
  IteratorContext c = *this;
  c.epoch_key = mix_seed(epoch_key, epoch);
  return c;
}

uint64_t mix_seed(uint64_t a, uint64_t b) {
  uint64_t z = a ^ (b + 0x9E3779B97F4A7C15ULL + (a << 6) + (a >> 2));
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

IteratorBase::IteratorBase(const IteratorContext& parent, std::string_view name)
    : ctx_(parent), name_(name) {
  ctx_.stage = parent.stage.empty() ? std::string(name) : str_cat(parent.stage, "/", name);
  if (!ctx_.stats) ctx_.stats = std::make_shared<PipelineStats>();
  counters_ = &ctx_.stats->stage(ctx_.stage);
}

std::optional<Element> IteratorBase::next() {
  TraceScope trace(ctx_.stage, "data");
  const int64_t start = begin_call();
  std::optional<Element> out = get_next();
  end_call(start, out ? 1 : 0);
  return out;
}

int64_t IteratorBase::next_rows(int64_t n, std::vector<int64_t>& rows) {
  TraceScope trace(ctx_.stage, "data");
  const int64_t start = begin_call();
  const int64_t got = get_next_rows(n, rows);
  end_call(start, got);
  return got;
}

int64_t IteratorBase::begin_call() {
  const int64_t start = now_ns();
  int64_t expected = 0;
  counters_->first_ns.compare_exchange_strong(expected, start, std::memory_order_relaxed);
  return start;
}

void IteratorBase::end_call(int64_t start, int64_t produced) {
  const int64_t end = now_ns();
  counters_->next_ns.fetch_add(end - start, std::memory_order_relaxed);
  if (produced > 0) {
    counters_->elements.fetch_add(produced, std::memory_order_relaxed);
    counters_->last_ns.store(end, std::memory_order_relaxed);
  }
}

int64_t IteratorBase::get_next_rows(int64_t, std::vector<int64_t>&) {
  throw_error(ErrorCode::kInternal, ctx_.stage, ": next_rows on a stage without a row table");
}

Element RowTable::element(int64_t row) const {
  Element e = element_row(*components, row);
  e.origin = position(row);
  return e;
}

void IteratorBase::save(StateWriter& w) {
  StateWriter::Scope scope(w, name_);
  save_state(w);
}

void IteratorBase::restore(StateReader& r) {
  StateReader::Scope scope(r, name_);
  restore_state(r);
}

void save_optional_input(StateWriter& w, std::string_view key, IteratorBase* input) {
  w.write_int(key, input != nullptr ? 1 : 0);
  if (input != nullptr) input->save(w);
}

}  // namespace tern::data
