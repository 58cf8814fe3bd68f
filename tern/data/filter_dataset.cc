// FilterDataset: predicate filtering.
#include "tern/data/filter_dataset.h"

#include "tern/base/error.h"
#include "tern/data/iterator_base.h"

namespace tern::data {
namespace {

class FilterDataset : public Dataset {
 public:
  FilterDataset(DatasetPtr input, PredicateFn predicate)
      : input_(std::move(input)), predicate_(std::move(predicate)) {
    TERN_CHECK_ARG(input_ != nullptr, "filter: null input dataset");
    TERN_CHECK_ARG(predicate_ != nullptr, "filter: empty predicate");
  }
  std::string name() const override { return "Filter"; }
  int64_t cardinality() const override {
    return input_->cardinality() == kInfiniteCardinality ? kInfiniteCardinality
                                                         : kUnknownCardinality;
  }
  std::unique_ptr<IteratorBase> make_stage_iterator(const IteratorContext& parent) const override;

  const DatasetPtr input_;
  const PredicateFn predicate_;
};

class FilterIterator : public IteratorBase {
 public:
  FilterIterator(const IteratorContext& parent, const FilterDataset& ds)
      : IteratorBase(parent, ds.name()),
        ds_(ds),
        input_(ds.input_->make_stage_iterator(context())) {}

 protected:
  std::optional<Element> get_next() override {
    for (;;) {
      std::optional<Element> e = input_->next();
      if (!e || ds_.predicate_(*e)) return e;
    }
  }
  void save_state(StateWriter& w) override { input_->save(w); }
  void restore_state(StateReader& r) override { input_->restore(r); }

 private:
  const FilterDataset& ds_;
  std::unique_ptr<IteratorBase> input_;
};

std::unique_ptr<IteratorBase> FilterDataset::make_stage_iterator(
    const IteratorContext& parent) const {
  return std::make_unique<FilterIterator>(parent, *this);
}

}  // namespace

DatasetPtr make_filter_dataset(DatasetPtr input, PredicateFn predicate) {
  return std::make_shared<FilterDataset>(std::move(input), std::move(predicate));
}

}  // namespace tern::data
