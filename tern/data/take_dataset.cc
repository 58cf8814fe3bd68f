// TakeDataset: a prefix of the input.
#include "tern/data/take_dataset.h"

#include <algorithm>

#include "tern/base/error.h"
#include "tern/data/iterator_base.h"

namespace tern::data {
namespace {

class TakeDataset : public Dataset {
 public:
  TakeDataset(DatasetPtr input, int64_t count) : input_(std::move(input)), count_(count) {
    TERN_CHECK_ARG(input_ != nullptr, "take: null input dataset");
  }
  std::string name() const override { return "Take"; }
  int64_t cardinality() const override {
    const int64_t n = input_->cardinality();
    if (count_ < 0) return n;
    if (n == kInfiniteCardinality) return count_;
    if (n == kUnknownCardinality) return kUnknownCardinality;
    return std::min(n, count_);
  }
  std::unique_ptr<IteratorBase> make_stage_iterator(const IteratorContext& parent) const override;

  const DatasetPtr input_;
  const int64_t count_;
};

class TakeIterator : public IteratorBase {
 public:
  TakeIterator(const IteratorContext& parent, const TakeDataset& ds)
      : IteratorBase(parent, ds.name()),
        ds_(ds),
        input_(ds.input_->make_stage_iterator(context())) {}

 protected:
  std::optional<Element> get_next() override {
    if (!input_ || (ds_.count_ >= 0 && taken_ >= ds_.count_)) {
      input_.reset();  // release the input (and its threads) early
      return std::nullopt;
    }
    std::optional<Element> e = input_->next();
    if (!e) {
      input_.reset();
      return std::nullopt;
    }
    ++taken_;
    return e;
  }
  void save_state(StateWriter& w) override {
    w.write_int("taken", taken_);
    save_optional_input(w, "has_input", input_.get());
  }
  void restore_state(StateReader& r) override {
    taken_ = r.read_int("taken");
    restore_optional_input(r, "has_input", input_,
                           [&] { return ds_.input_->make_stage_iterator(context()); });
  }

 private:
  const TakeDataset& ds_;
  std::unique_ptr<IteratorBase> input_;
  int64_t taken_ = 0;
};

std::unique_ptr<IteratorBase> TakeDataset::make_stage_iterator(
    const IteratorContext& parent) const {
  return std::make_unique<TakeIterator>(parent, *this);
}

}  // namespace

DatasetPtr make_take_dataset(DatasetPtr input, int64_t count) {
  return std::make_shared<TakeDataset>(std::move(input), count);
}

}  // namespace tern::data
