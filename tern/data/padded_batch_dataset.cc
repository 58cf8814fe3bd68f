// PaddedBatchDataset: batching with per-component padding.
#include "tern/data/padded_batch_dataset.h"

#include <algorithm>
#include <cstring>

#include "tern/base/error.h"
#include "tern/data/iterator_base.h"

namespace tern::data {
namespace {

// Copies `src` into the leading corner of `dst` (same rank, every dim of dst >= src's).
void copy_corner(const Tensor& src, char* dst, const std::vector<int64_t>& dst_dims) {
  const int rank = src.rank();
  const size_t item = dtype_size(src.dtype());
  if (src.num_elements() == 0) return;
  if (rank == 0) {
    std::memcpy(dst, src.raw_data(), item);
    return;
  }
  const std::vector<int64_t>& dims = src.shape().dims();
  const std::vector<int64_t> dst_strides = Shape(dst_dims).strides();
  const size_t row_bytes = static_cast<size_t>(dims.back()) * item;
  const int64_t rows = src.num_elements() / dims.back();
  std::vector<int64_t> idx(static_cast<size_t>(rank), 0);
  const char* s = static_cast<const char*>(src.raw_data());
  for (int64_t r = 0; r < rows; ++r) {
    int64_t off = 0;
    for (int a = 0; a + 1 < rank; ++a)
      off += idx[static_cast<size_t>(a)] * dst_strides[static_cast<size_t>(a)];
    std::memcpy(dst + static_cast<size_t>(off) * item, s + static_cast<size_t>(r) * row_bytes,
                row_bytes);
    for (int a = rank - 2; a >= 0; --a) {  // odometer over the outer axes
      if (++idx[static_cast<size_t>(a)] < dims[static_cast<size_t>(a)]) break;
      idx[static_cast<size_t>(a)] = 0;
    }
  }
}

}  // namespace

Element pad_and_stack(const std::vector<Element>& rows, const PaddedBatchOptions& options) {
  TERN_CHECK_ARG(!rows.empty(), "padded_batch: nothing to stack");
  const size_t arity = rows.front().size();
  TERN_CHECK_ARG(options.padded_shapes.empty() || options.padded_shapes.size() == arity,
                 "padded_batch: ", options.padded_shapes.size(), " padded shapes for elements of ",
                 arity, " components");
  TERN_CHECK_ARG(options.padding_values.empty() || options.padding_values.size() == arity,
                 "padded_batch: ", options.padding_values.size(),
                 " padding values for elements of ", arity, " components");
  Element out;
  for (size_t k = 0; k < arity; ++k) {
    const Tensor& first = rows.front().at(k);
    std::vector<int64_t> dims = options.padded_shapes.empty()
                                    ? std::vector<int64_t>(static_cast<size_t>(first.rank()), -1)
                                    : options.padded_shapes[k];
    TERN_CHECK_ARG(static_cast<int>(dims.size()) == first.rank(), "padded_batch: component ", k,
                   " has rank ", first.rank(), " but its padded shape has ", dims.size(), " dims");
    std::vector<int64_t> target = dims;
    for (size_t i = 0; i < rows.size(); ++i) {
      TERN_CHECK_ARG(rows[i].size() == arity, "padded_batch: element ", i,
                     row_position_suffix(rows[i], 0), " has ", rows[i].size(),
                     " components but element 0 has ", arity);
      const Tensor& t = rows[i][k];
      TERN_CHECK_ARG(t.dtype() == first.dtype() && t.rank() == first.rank(),
                     "padded_batch: component ", k, " of element ", i,
                     row_position_suffix(rows[i], 0), " is ", t.type().to_string(),
                     " but element 0 has ", first.type().to_string());
      for (int a = 0; a < t.rank(); ++a) {
        const int64_t d = t.shape().dim(a);
        int64_t& want = target[static_cast<size_t>(a)];
        if (dims[static_cast<size_t>(a)] < 0) {
          want = std::max(want, d);
        } else {
          TERN_CHECK_ARG(d <= want, "padded_batch: component ", k, " of element ", i,
                         row_position_suffix(rows[i], 0), " has shape ", t.shape(),
                         ", larger than the padded dim ", want, " on axis ", a);
        }
      }
    }
    std::vector<int64_t> out_dims{static_cast<int64_t>(rows.size())};
    out_dims.insert(out_dims.end(), target.begin(), target.end());
    const double pad = options.padding_values.empty() ? 0.0 : options.padding_values[k];
    Tensor batch = pad == 0.0 ? Tensor(first.dtype(), Shape(out_dims))
                              : Tensor::full(first.dtype(), Shape(out_dims), pad);
    const size_t row_bytes =
        static_cast<size_t>(Shape(target).num_elements()) * dtype_size(first.dtype());
    for (size_t i = 0; i < rows.size(); ++i) {
      copy_corner(rows[i][k], static_cast<char*>(batch.raw_data()) + i * row_bytes, target);
    }
    out.push_back(std::move(batch));
  }
  for (const Element& e : rows) {
    if (e.origin.size() != 1) {  // as stack_elements: one position per row, or none
      out.origin.clear();
      break;
    }
    out.origin.push_back(e.origin[0]);
  }
  return out;
}

namespace {

class PaddedBatchDataset : public Dataset {
 public:
  PaddedBatchDataset(DatasetPtr input, int64_t batch_size, PaddedBatchOptions options)
      : input_(std::move(input)), batch_size_(batch_size), options_(std::move(options)) {
    TERN_CHECK_ARG(input_ != nullptr, "padded_batch: null input dataset");
    TERN_CHECK_ARG(batch_size >= 1, "padded_batch: batch_size must be >= 1, got ", batch_size);
  }
  std::string name() const override { return "PaddedBatch"; }
  int64_t cardinality() const override {
    const int64_t n = input_->cardinality();
    if (n < 0) return n;
    return options_.drop_remainder ? n / batch_size_ : (n + batch_size_ - 1) / batch_size_;
  }
  std::unique_ptr<IteratorBase> make_stage_iterator(const IteratorContext& parent) const override;

  const DatasetPtr input_;
  const int64_t batch_size_;
  const PaddedBatchOptions options_;
};

class PaddedBatchIterator : public IteratorBase {
 public:
  PaddedBatchIterator(const IteratorContext& parent, const PaddedBatchDataset& ds)
      : IteratorBase(parent, ds.name()),
        ds_(ds),
        input_(ds.input_->make_stage_iterator(context())) {}

 protected:
  std::optional<Element> get_next() override {
    if (!input_) return std::nullopt;
    std::vector<Element> rows;
    while (static_cast<int64_t>(rows.size()) < ds_.batch_size_) {
      std::optional<Element> e = input_->next();
      if (!e) {
        input_.reset();
        break;
      }
      rows.push_back(std::move(*e));
    }
    if (rows.empty()) return std::nullopt;
    if (static_cast<int64_t>(rows.size()) < ds_.batch_size_ && ds_.options_.drop_remainder) {
      return std::nullopt;
    }
    return pad_and_stack(rows, ds_.options_);
  }
  void save_state(StateWriter& w) override { save_optional_input(w, "has_input", input_.get()); }
  void restore_state(StateReader& r) override {
    restore_optional_input(r, "has_input", input_,
                           [&] { return ds_.input_->make_stage_iterator(context()); });
  }

 private:
  const PaddedBatchDataset& ds_;
  std::unique_ptr<IteratorBase> input_;
};

std::unique_ptr<IteratorBase> PaddedBatchDataset::make_stage_iterator(
    const IteratorContext& parent) const {
  return std::make_unique<PaddedBatchIterator>(parent, *this);
}

}  // namespace

DatasetPtr make_padded_batch_dataset(DatasetPtr input, int64_t batch_size,
                                     PaddedBatchOptions options) {
  return std::make_shared<PaddedBatchDataset>(std::move(input), batch_size, std::move(options));
}

}  // namespace tern::data
