// UnbatchDataset: rows of each input element.
#include "tern/data/unbatch_dataset.h"

#include "tern/base/error.h"
#include "tern/data/iterator_base.h"

namespace tern::data {
namespace {

class UnbatchDataset : public Dataset {
 public:
  explicit UnbatchDataset(DatasetPtr input) : input_(std::move(input)) {
    TERN_CHECK_ARG(input_ != nullptr, "unbatch: null input dataset");
  }
  std::string name() const override { return "Unbatch"; }
  int64_t cardinality() const override {
    return input_->cardinality() == kInfiniteCardinality ? kInfiniteCardinality
                                                         : kUnknownCardinality;
  }
  std::unique_ptr<IteratorBase> make_stage_iterator(const IteratorContext& parent) const override;

  const DatasetPtr input_;
};

class UnbatchIterator : public IteratorBase {
 public:
  UnbatchIterator(const IteratorContext& parent, const UnbatchDataset& ds)
      : IteratorBase(parent, ds.name()), input_(ds.input_->make_stage_iterator(context())) {}

 protected:
  std::optional<Element> get_next() override {
    while (row_ >= rows_) {
      std::optional<Element> e = input_->next();
      if (!e) return std::nullopt;
      rows_ = leading_dim(*e, "unbatch");
      batch_ = std::move(*e);
      row_ = 0;
    }
    return element_row(batch_, row_++);
  }
  void save_state(StateWriter& w) override {
    input_->save(w);
    const bool has_batch = row_ < rows_;
    w.write_int("row", has_batch ? row_ : 0);
    w.write_element("batch", has_batch ? batch_ : Element{});
  }
  void restore_state(StateReader& r) override {
    input_->restore(r);
    row_ = r.read_int("row");
    batch_ = r.read_element("batch");
    rows_ = batch_.empty() ? 0 : leading_dim(batch_, "unbatch state");
    TERN_CHECK_ARG(row_ >= 0 && row_ <= rows_, "iterator state: unbatch row ", row_);
  }

 private:
  std::unique_ptr<IteratorBase> input_;
  Element batch_;
  int64_t rows_ = 0;
  int64_t row_ = 0;
};

std::unique_ptr<IteratorBase> UnbatchDataset::make_stage_iterator(
    const IteratorContext& parent) const {
  return std::make_unique<UnbatchIterator>(parent, *this);
}

}  // namespace

DatasetPtr make_unbatch_dataset(DatasetPtr input) {
  return std::make_shared<UnbatchDataset>(std::move(input));
}

}  // namespace tern::data
