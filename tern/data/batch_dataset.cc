// BatchDataset: fixed-size batching by stacking.
#include "tern/data/batch_dataset.h"

#include <cstring>

#include "tern/base/error.h"
#include "tern/data/iterator_base.h"

namespace tern::data {
namespace {

class BatchDataset : public Dataset {
 public:
  BatchDataset(DatasetPtr input, int64_t batch_size, bool drop_remainder)
      : input_(std::move(input)), batch_size_(batch_size), drop_remainder_(drop_remainder) {
    TERN_CHECK_ARG(input_ != nullptr, "batch: null input dataset");
    TERN_CHECK_ARG(batch_size >= 1, "batch: batch_size must be >= 1, got ", batch_size);
  }
  std::string name() const override { return "Batch"; }
  int64_t cardinality() const override {
    const int64_t n = input_->cardinality();
    if (n < 0) return n;
    return drop_remainder_ ? n / batch_size_ : (n + batch_size_ - 1) / batch_size_;
  }
  std::unique_ptr<IteratorBase> make_stage_iterator(const IteratorContext& parent) const override;

  const DatasetPtr input_;
  const int64_t batch_size_;
  const bool drop_remainder_;
};

class BatchIterator : public IteratorBase {
 public:
  BatchIterator(const IteratorContext& parent, const BatchDataset& ds)
      : IteratorBase(parent, ds.name()),
        ds_(ds),
        input_(ds.input_->make_stage_iterator(context())) {}

 protected:
  std::optional<Element> get_next() override {
    if (!input_) return std::nullopt;
    if (const RowTable* table = input_->row_table()) return gather(*table);
    std::vector<Element> rows;
    rows.reserve(static_cast<size_t>(std::min<int64_t>(ds_.batch_size_, 4096)));
    while (static_cast<int64_t>(rows.size()) < ds_.batch_size_) {
      std::optional<Element> e = input_->next();
      if (!e) {
        input_.reset();
        break;
      }
      rows.push_back(std::move(*e));
    }
    if (rows.empty()) return std::nullopt;
    if (static_cast<int64_t>(rows.size()) < ds_.batch_size_ && ds_.drop_remainder_) {
      return std::nullopt;
    }
    return stack_elements(rows, "batch");
  }
  void save_state(StateWriter& w) override { save_optional_input(w, "has_input", input_.get()); }
  void restore_state(StateReader& r) override {
    restore_optional_input(r, "has_input", input_,
                           [&] { return ds_.input_->make_stage_iterator(context()); });
  }

 private:
  // Rows of an in-memory source: copied from the source tensors straight into the batch (what
  // stacking their Elements gives, without making them).
  std::optional<Element> gather(const RowTable& table) {
    rows_.clear();
    if (input_->next_rows(ds_.batch_size_, rows_) < ds_.batch_size_) input_.reset();
    const int64_t n = static_cast<int64_t>(rows_.size());
    if (n == 0 || (n < ds_.batch_size_ && ds_.drop_remainder_)) return std::nullopt;
    Element out;
    out.reserve(table.components->size());
    for (int64_t r : rows_) out.origin.push_back(table.position(r));
    for (const Tensor& source : *table.components) {
      std::vector<int64_t> dims = source.shape().dims();
      const size_t row_bytes = source.nbytes() / static_cast<size_t>(dims[0]);
      dims[0] = n;
      Tensor batch = Tensor::uninitialized(source.dtype(), Shape(std::move(dims)));
      const char* src = static_cast<const char*>(source.raw_data());
      char* dst = static_cast<char*>(batch.raw_data());
      for (int64_t i = 0; i < n; ++i) {
        std::memcpy(dst + static_cast<size_t>(i) * row_bytes,
                    src + static_cast<size_t>(rows_[static_cast<size_t>(i)]) * row_bytes,
                    row_bytes);
      }
      out.push_back(std::move(batch));
    }
    return out;
  }

  const BatchDataset& ds_;
  std::unique_ptr<IteratorBase> input_;  // null once exhausted
  std::vector<int64_t> rows_;
};

std::unique_ptr<IteratorBase> BatchDataset::make_stage_iterator(
    const IteratorContext& parent) const {
  return std::make_unique<BatchIterator>(parent, *this);
}

}  // namespace

DatasetPtr make_batch_dataset(DatasetPtr input, int64_t batch_size, bool drop_remainder) {
  return std::make_shared<BatchDataset>(std::move(input), batch_size, drop_remainder);
}

}  // namespace tern::data
