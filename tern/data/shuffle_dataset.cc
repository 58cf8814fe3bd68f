// ShuffleDataset: buffered uniform shuffle with a saved RNG position and buffer.
#include "tern/data/shuffle_dataset.h"

#include <limits>

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

// Over an in-memory source (a row table) the buffer holds row numbers, not Elements, and the
// rows can go to batch as numbers (next_rows): the same picks from the same random stream, so the
// same order as the Element buffer, which the iterator uses otherwise and after a restore.
class ShuffleIterator : public IteratorBase {
 public:
  ShuffleIterator(const IteratorContext& parent, const ShuffleDataset& ds)
      : IteratorBase(parent, ds.name()),
        ds_(ds),
        seed_(ds.reshuffle_ ? mix_seed(ds.seed_, context().epoch_key) : ds.seed_),
        rng_(seed_),
        input_(ds.input_->make_stage_iterator(context())),
        table_(input_->row_table()) {}

  const RowTable* row_table() const override { return table_; }

 protected:
  std::optional<Element> get_next() override {
    if (table_) {
      one_row_.clear();
      if (get_next_rows(1, one_row_) == 0) return std::nullopt;
      return table_->element(one_row_[0]);
    }
    while (input_ && static_cast<int64_t>(buffer_.size()) < ds_.buffer_size_) {
      std::optional<Element> e = input_->next();
      if (!e) {
        input_.reset();
        break;
      }
      buffer_.push_back(std::move(*e));
    }
    if (buffer_.empty()) return std::nullopt;
    return take(buffer_);
  }

  // The Element path pulls one input element before each pick until the buffer is full again:
  // (buffer_size - buffered) + (n - 1) rows for n picks, pulled here in one call.
  int64_t get_next_rows(int64_t n, std::vector<int64_t>& rows) override {
    if (n <= 0) return 0;
    pending_.clear();
    if (input_) {
      const int64_t room = ds_.buffer_size_ - static_cast<int64_t>(rows_.size());
      const int64_t want = room > std::numeric_limits<int64_t>::max() - (n - 1)
                               ? std::numeric_limits<int64_t>::max()  // a buffer "of everything"
                               : room + (n - 1);
      if (want > 0 && input_->next_rows(want, pending_) < want) input_.reset();
    }
    size_t next_pending = 0;
    int64_t got = 0;
    for (; got < n; ++got) {
      while (next_pending < pending_.size() &&
             static_cast<int64_t>(rows_.size()) < ds_.buffer_size_) {
        rows_.push_back(pending_[next_pending++]);
      }
      if (rows_.empty()) break;
      rows.push_back(take(rows_));
    }
    return got;
  }

  void save_state(StateWriter& w) override {
    w.write_int("seed", static_cast<int64_t>(seed_));
    w.write_int("rng_position", static_cast<int64_t>(rng_.position()));
    save_optional_input(w, "has_input", input_.get());
    if (table_) {  // the same state as the Element buffer's
      std::vector<Element> elements;
      elements.reserve(rows_.size());
      for (int64_t r : rows_) elements.push_back(table_->element(r));
      w.write_elements("buffer", elements);
    } else {
      w.write_elements("buffer", buffer_);
    }
  }

  void restore_state(StateReader& r) override {
    const uint64_t seed = static_cast<uint64_t>(r.read_int("seed"));
    const uint64_t position = static_cast<uint64_t>(r.read_int("rng_position"));
    restore_optional_input(r, "has_input", input_,
                           [&] { return ds_.input_->make_stage_iterator(context()); });
    buffer_ = r.read_elements("buffer");
    rows_.clear();
    table_ = nullptr;  // the restored buffer holds Elements
    seed_ = seed;
    rng_ = PhiloxStream(seed_);
    rng_.seek(position);
  }

 private:
  // A uniformly chosen buffer entry, removed (swapped with the last).
  template <typename T>
  T take(std::vector<T>& buffer) {
    const size_t pick = static_cast<size_t>(rng_.next_below(buffer.size()));
    std::swap(buffer[pick], buffer.back());
    T out = std::move(buffer.back());
    buffer.pop_back();
    return out;
  }

  const ShuffleDataset& ds_;
  uint64_t seed_;
  PhiloxStream rng_;
  std::unique_ptr<IteratorBase> input_;  // null once exhausted
  const RowTable* table_;                // non-null: the buffer is rows_
  std::vector<Element> buffer_;
  std::vector<int64_t> rows_;
  std::vector<int64_t> pending_;  // rows pulled for the picks of one get_next_rows call
  std::vector<int64_t> one_row_;  // get_next's pick (no allocation per element)
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
