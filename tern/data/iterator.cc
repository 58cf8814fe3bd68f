// Iterator: the root of a running pipeline.
#include "tern/data/iterator.h"

#include "tern/base/error.h"
#include "tern/data/iterator_base.h"

namespace tern::data {

Iterator::Iterator(DatasetPtr dataset, uint64_t epoch)
    : dataset_(std::move(dataset)), epoch_(epoch), stats_(std::make_shared<PipelineStats>()) {
  TERN_CHECK_ARG(dataset_ != nullptr, "make_iterator: null dataset");
  IteratorContext root;
  root.stats = stats_;
  root = root.with_epoch(epoch);
  root_ = dataset_->make_stage_iterator(root);
}

Iterator::~Iterator() = default;
Iterator::Iterator(Iterator&&) noexcept = default;
Iterator& Iterator::operator=(Iterator&&) noexcept = default;

std::optional<Element> Iterator::next() {
  TERN_CHECK_ARG(root_ != nullptr, "Iterator::next on a moved-from iterator");
  return root_->next();
}

std::vector<Element> Iterator::take(int64_t max_elements) {
  std::vector<Element> out;
  while (max_elements < 0 || static_cast<int64_t>(out.size()) < max_elements) {
    std::optional<Element> e = next();
    if (!e) break;
    out.push_back(std::move(*e));
  }
  return out;
}

std::string Iterator::save_state() {
  TERN_CHECK_ARG(root_ != nullptr, "Iterator::save_state on a moved-from iterator");
  StateWriter w;
  root_->save(w);
  return w.finish();
}

void Iterator::restore_state(std::string_view blob) {
  TERN_CHECK_ARG(root_ != nullptr, "Iterator::restore_state on a moved-from iterator");
  StateReader r(blob);
  // Restore into a fresh iterator so a failed restore leaves this one as it was.
  IteratorContext root;
  root.stats = stats_;
  std::unique_ptr<IteratorBase> fresh = dataset_->make_stage_iterator(root.with_epoch(epoch_));
  fresh->restore(r);
  r.expect_end();
  root_ = std::move(fresh);
}

std::vector<StageStats> Iterator::stats() const {
  return stats_->snapshot();
}
std::string Iterator::stats_report() const {
  return stats_->report();
}

Iterator Dataset::make_iterator(uint64_t epoch) const {
  return Iterator(self(), epoch);
}

}  // namespace tern::data
