// RangeDataset: the range source.
#include "tern/data/range_dataset.h"

#include "tern/base/error.h"
#include "tern/data/iterator_base.h"

namespace tern::data {
namespace {

class RangeDataset : public Dataset {
 public:
  RangeDataset(int64_t start, int64_t stop, int64_t step)
      : start_(start), stop_(stop), step_(step) {
    TERN_CHECK_ARG(step != 0, "range: step must not be 0");
  }
  std::string name() const override { return "Range"; }
  int64_t cardinality() const override {
    // 128-bit so that extreme bounds cannot overflow; no range has more than 2^64 elements.
    const __int128 span = static_cast<__int128>(stop_) - start_;
    const __int128 step = step_;
    if ((step > 0 && span <= 0) || (step < 0 && span >= 0)) return 0;
    const __int128 n = (span - (step > 0 ? 1 : -1)) / step + 1;
    return n > INT64_MAX ? INT64_MAX : static_cast<int64_t>(n);
  }
  std::unique_ptr<IteratorBase> make_stage_iterator(const IteratorContext& parent) const override;

  int64_t start_, stop_, step_;
};

class RangeIterator : public IteratorBase {
 public:
  RangeIterator(const IteratorContext& parent, const RangeDataset& ds)
      : IteratorBase(parent, ds.name()), ds_(ds), count_(ds.cardinality()) {}

 protected:
  std::optional<Element> get_next() override {
    if (index_ >= count_) return std::nullopt;
    const int64_t value = ds_.start_ + index_++ * ds_.step_;
    Tensor t(DType::kI64, Shape{});
    *t.data<int64_t>() = value;
    return Element{t};
  }
  void save_state(StateWriter& w) override { w.write_int("index", index_); }
  void restore_state(StateReader& r) override {
    const int64_t index = r.read_int("index");
    TERN_CHECK_ARG(index >= 0 && index <= count_, "iterator state: range index ", index,
                   " outside [0, ", count_, "]");
    index_ = index;
  }

 private:
  const RangeDataset& ds_;
  int64_t count_;
  int64_t index_ = 0;
};

std::unique_ptr<IteratorBase> RangeDataset::make_stage_iterator(
    const IteratorContext& parent) const {
  return std::make_unique<RangeIterator>(parent, *this);
}

}  // namespace

DatasetPtr range(int64_t stop) {
  return range(0, stop, 1);
}

DatasetPtr range(int64_t start, int64_t stop, int64_t step) {
  return std::make_shared<RangeDataset>(start, stop, step);
}

}  // namespace tern::data
