// SkipDataset: drops a prefix of the input, lazily on the first next().
#include "tern/data/skip_dataset.h"

#include <algorithm>

#include "tern/base/error.h"
#include "tern/data/iterator_base.h"

namespace tern::data {
namespace {

class SkipDataset : public Dataset {
 public:
  SkipDataset(DatasetPtr input, int64_t count) : input_(std::move(input)), count_(count) {
    TERN_CHECK_ARG(input_ != nullptr, "skip: null input dataset");
  }
  std::string name() const override { return "Skip"; }
  int64_t cardinality() const override {
    const int64_t n = input_->cardinality();
    if (n < 0) return count_ < 0 && n == kInfiniteCardinality ? 0 : n;
    return count_ < 0 ? 0 : std::max<int64_t>(n - count_, 0);
  }
  std::unique_ptr<IteratorBase> make_stage_iterator(const IteratorContext& parent) const override;

  const DatasetPtr input_;
  const int64_t count_;
};

class SkipIterator : public IteratorBase {
 public:
  SkipIterator(const IteratorContext& parent, const SkipDataset& ds)
      : IteratorBase(parent, ds.name()),
        ds_(ds),
        input_(ds.input_->make_stage_iterator(context())) {}

 protected:
  std::optional<Element> get_next() override {
    if (!input_) return std::nullopt;
    while (ds_.count_ < 0 || skipped_ < ds_.count_) {
      if (!input_->next()) {
        input_.reset();
        return std::nullopt;
      }
      ++skipped_;
    }
    std::optional<Element> e = input_->next();
    if (!e) input_.reset();
    return e;
  }
  void save_state(StateWriter& w) override {
    w.write_int("skipped", skipped_);
    save_optional_input(w, "has_input", input_.get());
  }
  void restore_state(StateReader& r) override {
    skipped_ = r.read_int("skipped");
    restore_optional_input(r, "has_input", input_,
                           [&] { return ds_.input_->make_stage_iterator(context()); });
  }

 private:
  const SkipDataset& ds_;
  std::unique_ptr<IteratorBase> input_;
  int64_t skipped_ = 0;
};

std::unique_ptr<IteratorBase> SkipDataset::make_stage_iterator(
    const IteratorContext& parent) const {
  return std::make_unique<SkipIterator>(parent, *this);
}

}  // namespace

DatasetPtr make_skip_dataset(DatasetPtr input, int64_t count) {
  return std::make_shared<SkipDataset>(std::move(input), count);
}

}  // namespace tern::data
