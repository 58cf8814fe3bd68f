// RepeatDataset: finite and infinite repetition with a saved epoch counter.
#include "tern/data/repeat_dataset.h"

#include "tern/base/checked_math.h"
#include "tern/base/error.h"
#include "tern/data/iterator_base.h"

namespace tern::data {
namespace {

class RepeatDataset : public Dataset {
 public:
  RepeatDataset(DatasetPtr input, int64_t count) : input_(std::move(input)), count_(count) {
    TERN_CHECK_ARG(input_ != nullptr, "repeat: null input dataset");
  }
  std::string name() const override { return "Repeat"; }
  int64_t cardinality() const override {
    const int64_t n = input_->cardinality();
    if (n == 0 || count_ == 0) return 0;
    if (count_ < 0) return kInfiniteCardinality;
    if (n < 0) return n;
    int64_t total = 0;
    if (__builtin_mul_overflow(n, count_, &total)) return kUnknownCardinality;
    return total;
  }
  std::unique_ptr<IteratorBase> make_stage_iterator(const IteratorContext& parent) const override;

  const DatasetPtr input_;
  const int64_t count_;
};

class RepeatIterator : public IteratorBase {
 public:
  RepeatIterator(const IteratorContext& parent, const RepeatDataset& ds)
      : IteratorBase(parent, ds.name()), ds_(ds) {}

 protected:
  std::optional<Element> get_next() override {
    while (!done_) {
      if (!input_) {
        if (ds_.count_ >= 0 && epoch_ >= ds_.count_) break;
        input_ = make_input();
        produced_this_epoch_ = false;
      }
      std::optional<Element> e = input_->next();
      if (e) {
        produced_this_epoch_ = true;
        return e;
      }
      input_.reset();
      ++epoch_;
      if (!produced_this_epoch_) break;  // an empty pass: repeating cannot yield more
    }
    done_ = true;
    return std::nullopt;
  }

  void save_state(StateWriter& w) override {
    w.write_int("epoch", epoch_);
    w.write_int("done", done_ ? 1 : 0);
    w.write_int("produced_this_epoch", produced_this_epoch_ ? 1 : 0);
    save_optional_input(w, "has_input", input_.get());
  }
  void restore_state(StateReader& r) override {
    const int64_t epoch = r.read_int("epoch");
    TERN_CHECK_ARG(epoch >= 0, "iterator state: repeat epoch ", epoch);
    epoch_ = epoch;
    done_ = r.read_int("done") != 0;
    produced_this_epoch_ = r.read_int("produced_this_epoch") != 0;
    restore_optional_input(r, "has_input", input_, [&] { return make_input(); });
  }

 private:
  std::unique_ptr<IteratorBase> make_input() {
    return ds_.input_->make_stage_iterator(context().with_epoch(static_cast<uint64_t>(epoch_)));
  }

  const RepeatDataset& ds_;
  std::unique_ptr<IteratorBase> input_;
  int64_t epoch_ = 0;
  bool produced_this_epoch_ = false;
  bool done_ = false;
};

std::unique_ptr<IteratorBase> RepeatDataset::make_stage_iterator(
    const IteratorContext& parent) const {
  return std::make_unique<RepeatIterator>(parent, *this);
}

}  // namespace

DatasetPtr make_repeat_dataset(DatasetPtr input, int64_t count) {
  return std::make_shared<RepeatDataset>(std::move(input), count);
}

}  // namespace tern::data
