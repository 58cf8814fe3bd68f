// ShuffleDataset: buffered uniform shuffle with a saved RNG position and buffer.
#include "tern/data/shuffle_dataset.h"

#include "tern/base/error.h"
#include "tern/base/philox.h"
#include "tern/data/iterator_base.h"

namespace tern::data {
namespace {

class ShuffleDataset : public Dataset {
 public:
  ShuffleDataset(DatasetPtr input, int64_t buffer_size, uint64_t seed, bool reshuffle)
      : input_(std::move(input)), buffer_size_(buffer_size), seed_(seed), reshuffle_(reshuffle) {
    TERN_CHECK_ARG(input_ != nullptr, "shuffle: null input dataset");
    TERN_CHECK_ARG(buffer_size >= 1, "shuffle: buffer_size must be >= 1, got ", buffer_size);
  }
  std::string name() const override { return "Shuffle"; }
  int64_t cardinality() const override { return input_->cardinality(); }
  std::unique_ptr<IteratorBase> make_stage_iterator(const IteratorContext& parent) const override;

  const DatasetPtr input_;
  const int64_t buffer_size_;
  const uint64_t seed_;
  const bool reshuffle_;
};

class ShuffleIterator : public IteratorBase {
 public:
  ShuffleIterator(const IteratorContext& parent, const ShuffleDataset& ds)
      : IteratorBase(parent, ds.name()),
        ds_(ds),
        seed_(ds.reshuffle_ ? mix_seed(ds.seed_, context().epoch_key) : ds.seed_),
        rng_(seed_),
        input_(ds.input_->make_stage_iterator(context())) {}

 protected:
  std::optional<Element> get_next() override {
    while (input_ && static_cast<int64_t>(buffer_.size()) < ds_.buffer_size_) {
      std::optional<Element> e = input_->next();
      if (!e) {
        input_.reset();
        break;
      }
      buffer_.push_back(std::move(*e));
    }
    if (buffer_.empty()) return std::nullopt;
    const size_t pick = static_cast<size_t>(rng_.next_below(buffer_.size()));
    std::swap(buffer_[pick], buffer_.back());
    Element out = std::move(buffer_.back());
    buffer_.pop_back();
    return out;
  }

  void save_state(StateWriter& w) override {
    w.write_int("seed", static_cast<int64_t>(seed_));
    w.write_int("rng_position", static_cast<int64_t>(rng_.position()));
    save_optional_input(w, "has_input", input_.get());
    w.write_elements("buffer", buffer_);
  }

  void restore_state(StateReader& r) override {
    const uint64_t seed = static_cast<uint64_t>(r.read_int("seed"));
    const uint64_t position = static_cast<uint64_t>(r.read_int("rng_position"));
    restore_optional_input(r, "has_input", input_,
                           [&] { return ds_.input_->make_stage_iterator(context()); });
    buffer_ = r.read_elements("buffer");
    seed_ = seed;
    rng_ = PhiloxStream(seed_);
    rng_.seek(position);
  }

 private:
  const ShuffleDataset& ds_;
  uint64_t seed_;
  PhiloxStream rng_;
  std::unique_ptr<IteratorBase> input_;  // null once exhausted
  std::vector<Element> buffer_;
};

std::unique_ptr<IteratorBase> ShuffleDataset::make_stage_iterator(
    const IteratorContext& parent) const {
  return std::make_unique<ShuffleIterator>(parent, *this);
}

}  // namespace

DatasetPtr make_shuffle_dataset(DatasetPtr input, int64_t buffer_size, uint64_t seed,
                                bool reshuffle_each_iteration) {
  return std::make_shared<ShuffleDataset>(std::move(input), buffer_size, seed,
                                          reshuffle_each_iteration);
}

}  // namespace tern::data
