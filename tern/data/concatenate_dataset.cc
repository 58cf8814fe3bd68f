// ConcatenateDataset: two inputs back to back, with a dtype check at the seam.
#include "tern/data/concatenate_dataset.h"

#include "tern/base/error.h"
#include "tern/data/iterator_base.h"

namespace tern::data {
namespace {

class ConcatenateDataset : public Dataset {
 public:
  ConcatenateDataset(DatasetPtr first, DatasetPtr second)
      : first_(std::move(first)), second_(std::move(second)) {
    TERN_CHECK_ARG(first_ != nullptr && second_ != nullptr, "concatenate: null input dataset");
  }
  std::string name() const override { return "Concatenate"; }
  int64_t cardinality() const override {
    const int64_t a = first_->cardinality(), b = second_->cardinality();
    if (a == kInfiniteCardinality || b == kInfiniteCardinality) return kInfiniteCardinality;
    if (a < 0 || b < 0) return kUnknownCardinality;
    int64_t n;
    return __builtin_add_overflow(a, b, &n) ? kUnknownCardinality : n;
  }
  std::unique_ptr<IteratorBase> make_stage_iterator(const IteratorContext& parent) const override;

  const DatasetPtr first_, second_;
};

class ConcatenateIterator : public IteratorBase {
 public:
  ConcatenateIterator(const IteratorContext& parent, const ConcatenateDataset& ds)
      : IteratorBase(parent, ds.name()), ds_(ds), input_(make_input(0)) {}

 protected:
  std::optional<Element> get_next() override {
    while (input_) {
      std::optional<Element> e = input_->next();
      if (e) {
        check_signature(*e);
        return e;
      }
      input_ = ++index_ < 2 ? make_input(index_) : nullptr;
    }
    return std::nullopt;
  }
  void save_state(StateWriter& w) override {
    w.write_int("index", index_);
    w.write_string("signature", signature_);
    if (input_) input_->save(w);
  }
  void restore_state(StateReader& r) override {
    const int64_t index = r.read_int("index");
    TERN_CHECK_ARG(index >= 0 && index <= 2, "iterator state: concatenate index ", index);
    index_ = index;
    signature_ = r.read_string("signature");
    input_ = index_ < 2 ? make_input(index_) : nullptr;
    if (input_) input_->restore(r);
  }

 private:
  std::unique_ptr<IteratorBase> make_input(int64_t i) {
    return (i == 0 ? ds_.first_ : ds_.second_)->make_stage_iterator(context().branch(i));
  }
  void check_signature(const Element& e) {
    std::string sig = "(";
    for (size_t i = 0; i < e.size(); ++i) sig += str_cat(i ? ", " : "", dtype_name(e[i].dtype()));
    sig += ")";
    if (index_ == 0) {
      if (signature_.empty()) signature_ = sig;
    } else if (!signature_.empty() && sig != signature_) {
      throw_error(ErrorCode::kInvalidArgument, "concatenate: the second input yields dtypes ", sig,
                  " but the first yields ", signature_);
    }
  }

  const ConcatenateDataset& ds_;
  int64_t index_ = 0;
  std::string signature_;  // dtypes of the first input's first element
  std::unique_ptr<IteratorBase> input_;
};

std::unique_ptr<IteratorBase> ConcatenateDataset::make_stage_iterator(
    const IteratorContext& parent) const {
  return std::make_unique<ConcatenateIterator>(parent, *this);
}

}  // namespace

DatasetPtr make_concatenate_dataset(DatasetPtr first, DatasetPtr second) {
  return std::make_shared<ConcatenateDataset>(std::move(first), std::move(second));
}

}  // namespace tern::data
