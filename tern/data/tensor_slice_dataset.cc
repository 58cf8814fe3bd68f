// TensorSliceDataset: from_tensors and from_tensor_slices.
#include "tern/data/tensor_slice_dataset.h"

#include <algorithm>

#include "tern/base/error.h"
#include "tern/data/iterator_base.h"

namespace tern::data {
namespace {

class TensorSliceDataset : public Dataset {
 public:
  TensorSliceDataset(Element components, bool slice, SliceSource source = {})
      : components_(std::move(components)), slice_(slice), stride_(source.stride) {
    TERN_CHECK_ARG(source.first >= 0 && source.stride >= 1, "from_tensor_slices: source rows ",
                   source.first, " + i * ", source.stride);
    if (!source.file.empty()) file_ = source_file_id(source.file);
    first_ = source.first;
    for (size_t k = 0; k < components_.size(); ++k) {
      TERN_CHECK_ARG(components_[k].defined(), name(), ": component ", k, " is undefined");
    }
    rows_ = slice_ ? leading_dim(components_, "from_tensor_slices") : 1;
    table_ = RowTable{&components_, file_, first_, stride_};
  }

  std::string name() const override { return slice_ ? "TensorSlices" : "Tensors"; }
  int64_t cardinality() const override { return rows_; }
  std::unique_ptr<IteratorBase> make_stage_iterator(const IteratorContext& parent) const override;

  const Element& components() const { return components_; }
  bool slice() const { return slice_; }
  int64_t rows() const { return rows_; }
  const RowTable& table() const { return table_; }

 private:
  Element components_;
  bool slice_;
  int64_t stride_;
  int32_t file_ = -1;
  int64_t first_ = 0;
  int64_t rows_;
  RowTable table_;  // points into components_: the dataset is neither copied nor moved
};

class TensorSliceIterator : public IteratorBase {
 public:
  TensorSliceIterator(const IteratorContext& parent, const TensorSliceDataset& ds)
      : IteratorBase(parent, ds.name()), ds_(ds) {}

 protected:
  std::optional<Element> get_next() override {
    if (index_ >= ds_.rows()) return std::nullopt;
    const int64_t i = index_++;
    if (!ds_.slice()) return ds_.components();
    return ds_.table().element(i);
  }
  const RowTable* row_table() const override { return ds_.slice() ? &ds_.table() : nullptr; }
  int64_t get_next_rows(int64_t n, std::vector<int64_t>& rows) override {
    const int64_t got = std::max<int64_t>(0, std::min(n, ds_.rows() - index_));
    for (int64_t i = 0; i < got; ++i) rows.push_back(index_ + i);
    index_ += got;
    return got;
  }
  void save_state(StateWriter& w) override { w.write_int("index", index_); }
  void restore_state(StateReader& r) override {
    const int64_t index = r.read_int("index");
    TERN_CHECK_ARG(index >= 0 && index <= ds_.rows(), "iterator state: ", ds_.name(), " index ",
                   index, " outside [0, ", ds_.rows(), "]");
    index_ = index;
  }

 private:
  const TensorSliceDataset& ds_;
  int64_t index_ = 0;
};

std::unique_ptr<IteratorBase> TensorSliceDataset::make_stage_iterator(
    const IteratorContext& parent) const {
  return std::make_unique<TensorSliceIterator>(parent, *this);
}

}  // namespace

DatasetPtr from_tensors(Element element) {
  return std::make_shared<TensorSliceDataset>(std::move(element), false);
}

DatasetPtr from_tensor_slices(Element components, SliceSource source) {
  return std::make_shared<TensorSliceDataset>(std::move(components), true, std::move(source));
}

}  // namespace tern::data
