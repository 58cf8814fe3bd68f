// ShardDataset: every num_shards-th element.
#include "tern/data/shard_dataset.h"

#include "tern/base/error.h"
#include "tern/data/iterator_base.h"

namespace tern::data {
namespace {

class ShardDataset : public Dataset {
 public:
  ShardDataset(DatasetPtr input, int64_t num_shards, int64_t index)
      : input_(std::move(input)), num_shards_(num_shards), index_(index) {
    TERN_CHECK_ARG(input_ != nullptr, "shard: null input dataset");
    TERN_CHECK_ARG(num_shards >= 1, "shard: num_shards must be >= 1, got ", num_shards);
    TERN_CHECK_ARG(index >= 0 && index < num_shards, "shard: index ", index, " outside [0, ",
                   num_shards, ")");
  }
  std::string name() const override { return "Shard"; }
  int64_t cardinality() const override {
    const int64_t n = input_->cardinality();
    if (n < 0) return n;
    return n > index_ ? (n - index_ - 1) / num_shards_ + 1 : 0;
  }
  std::unique_ptr<IteratorBase> make_stage_iterator(const IteratorContext& parent) const override;

  const DatasetPtr input_;
  const int64_t num_shards_, index_;
};

class ShardIterator : public IteratorBase {
 public:
  ShardIterator(const IteratorContext& parent, const ShardDataset& ds)
      : IteratorBase(parent, ds.name()),
        ds_(ds),
        input_(ds.input_->make_stage_iterator(context())) {}

 protected:
  std::optional<Element> get_next() override {
    if (!input_) return std::nullopt;
    // Skip to the next element whose position is index (mod num_shards).
    for (;;) {
      std::optional<Element> e = input_->next();
      if (!e) {
        input_.reset();
        return std::nullopt;
      }
      if (position_++ % ds_.num_shards_ == ds_.index_) return e;
    }
  }
  void save_state(StateWriter& w) override {
    w.write_int("position", position_);
    save_optional_input(w, "has_input", input_.get());
  }
  void restore_state(StateReader& r) override {
    position_ = r.read_int("position");
    restore_optional_input(r, "has_input", input_,
                           [&] { return ds_.input_->make_stage_iterator(context()); });
  }

 private:
  const ShardDataset& ds_;
  std::unique_ptr<IteratorBase> input_;
  int64_t position_ = 0;  // input elements read
};

std::unique_ptr<IteratorBase> ShardDataset::make_stage_iterator(
    const IteratorContext& parent) const {
  return std::make_unique<ShardIterator>(parent, *this);
}

}  // namespace

DatasetPtr make_shard_dataset(DatasetPtr input, int64_t num_shards, int64_t index) {
  return std::make_shared<ShardDataset>(std::move(input), num_shards, index);
}

}  // namespace tern::data
