// InterleaveDataset: round-robin over a cycle of per-element datasets.
#include "tern/data/interleave_dataset.h"

#include "tern/base/error.h"
#include "tern/data/iterator_base.h"

namespace tern::data {
namespace {

class InterleaveDataset : public Dataset {
 public:
  InterleaveDataset(DatasetPtr input, InterleaveFn fn, InterleaveOptions options)
      : input_(std::move(input)), fn_(std::move(fn)), options_(options) {
    TERN_CHECK_ARG(input_ != nullptr, "interleave: null input dataset");
    TERN_CHECK_ARG(fn_ != nullptr, "interleave: empty function");
    TERN_CHECK_ARG(options.cycle_length >= 1, "interleave: cycle_length must be >= 1, got ",
                   options.cycle_length);
    TERN_CHECK_ARG(options.block_length >= 1, "interleave: block_length must be >= 1, got ",
                   options.block_length);
  }
  std::string name() const override { return "Interleave"; }
  int64_t cardinality() const override {
    return input_->cardinality() == 0 ? 0 : kUnknownCardinality;
  }
  std::unique_ptr<IteratorBase> make_stage_iterator(const IteratorContext& parent) const override;

  DatasetPtr dataset_for(const Element& e) const {
    DatasetPtr d = fn_(e);
    TERN_CHECK_ARG(d != nullptr, "interleave: the function returned a null dataset for ",
                   element_signature(e));
    return d;
  }

  const DatasetPtr input_;
  const InterleaveFn fn_;
  const InterleaveOptions options_;
};

class InterleaveIterator : public IteratorBase {
 public:
  InterleaveIterator(const IteratorContext& parent, const InterleaveDataset& ds)
      : IteratorBase(parent, ds.name()),
        ds_(ds),
        input_(ds.input_->make_stage_iterator(context())),
        slots_(static_cast<size_t>(ds.options_.cycle_length)) {}

 protected:
  std::optional<Element> get_next() override {
    while (!end_of_input_ || open_ > 0) {
      Slot& slot = slots_[static_cast<size_t>(cycle_index_)];
      if (slot.iterator) {
        std::optional<Element> e = slot.iterator->next();
        if (e) {
          if (++block_index_ == ds_.options_.block_length) advance();
          return e;
        }
        slot.close();
        --open_;
        advance();
      } else if (!end_of_input_) {
        std::optional<Element> in = input_->next();
        if (!in) {
          end_of_input_ = true;
        } else {
          open_slot(slot, std::move(*in));
        }
      } else {
        advance();
      }
    }
    return std::nullopt;
  }

  void save_state(StateWriter& w) override {
    w.write_int("end_of_input", end_of_input_ ? 1 : 0);
    if (!end_of_input_) input_->save(w);
    w.write_int("cycle_index", cycle_index_);
    w.write_int("block_index", block_index_);
    for (Slot& slot : slots_) {
      w.write_int("open", slot.iterator ? 1 : 0);
      if (!slot.iterator) continue;
      w.write_element("source", slot.source);
      slot.iterator->save(w);
    }
  }

  void restore_state(StateReader& r) override {
    end_of_input_ = r.read_int("end_of_input") != 0;
    if (!end_of_input_) input_->restore(r);
    cycle_index_ = r.read_int("cycle_index");
    block_index_ = r.read_int("block_index");
    TERN_CHECK_ARG(cycle_index_ >= 0 && cycle_index_ < ds_.options_.cycle_length,
                   "iterator state: interleave cycle index ", cycle_index_);
    open_ = 0;
    for (Slot& slot : slots_) {
      slot.close();
      if (r.read_int("open") == 0) continue;
      open_slot(slot, r.read_element("source"));
      slot.iterator->restore(r);
    }
  }

 private:
  struct Slot {
    Element source;  // the input element the slot's dataset came from
    DatasetPtr dataset;
    std::unique_ptr<IteratorBase> iterator;  // after `dataset`: destroyed first

    // The iterator goes before the dataset it refers to.
    void close() {
      iterator.reset();
      dataset.reset();
      source.clear();
    }
  };

  void open_slot(Slot& slot, Element source) {
    slot.dataset = ds_.dataset_for(source);
    slot.iterator = slot.dataset->make_stage_iterator(context());
    slot.source = std::move(source);
    ++open_;
  }
  void advance() {
    block_index_ = 0;
    cycle_index_ = (cycle_index_ + 1) % ds_.options_.cycle_length;
  }

  const InterleaveDataset& ds_;
  std::unique_ptr<IteratorBase> input_;
  std::vector<Slot> slots_;
  int64_t cycle_index_ = 0;
  int64_t block_index_ = 0;
  int64_t open_ = 0;
  bool end_of_input_ = false;
};

std::unique_ptr<IteratorBase> InterleaveDataset::make_stage_iterator(
    const IteratorContext& parent) const {
  return std::make_unique<InterleaveIterator>(parent, *this);
}

}  // namespace

DatasetPtr make_interleave_dataset(DatasetPtr input, InterleaveFn fn, InterleaveOptions options) {
  return std::make_shared<InterleaveDataset>(std::move(input), std::move(fn), options);
}

}  // namespace tern::data
