// ZipDataset: lock-step iteration over several inputs.
#include "tern/data/zip_dataset.h"

#include <algorithm>

#include "tern/base/error.h"
#include "tern/data/iterator_base.h"

namespace tern::data {
namespace {

class ZipDataset : public Dataset {
 public:
  explicit ZipDataset(std::vector<DatasetPtr> inputs) : inputs_(std::move(inputs)) {
    TERN_CHECK_ARG(!inputs_.empty(), "zip: no input datasets");
    for (size_t i = 0; i < inputs_.size(); ++i) {
      TERN_CHECK_ARG(inputs_[i] != nullptr, "zip: input ", i, " is null");
    }
  }
  std::string name() const override { return "Zip"; }
  int64_t cardinality() const override {
    int64_t n = kInfiniteCardinality;
    bool unknown = false;
    for (const DatasetPtr& d : inputs_) {
      const int64_t c = d->cardinality();
      if (c == kUnknownCardinality) unknown = true;
      if (c >= 0) n = n < 0 ? c : std::min(n, c);
    }
    if (n == 0) return 0;
    return unknown ? kUnknownCardinality : n;
  }
  std::unique_ptr<IteratorBase> make_stage_iterator(const IteratorContext& parent) const override;

  const std::vector<DatasetPtr> inputs_;
};

class ZipIterator : public IteratorBase {
 public:
  ZipIterator(const IteratorContext& parent, const ZipDataset& ds)
      : IteratorBase(parent, ds.name()) {
    for (size_t i = 0; i < ds.inputs_.size(); ++i) {
      inputs_.push_back(
          ds.inputs_[i]->make_stage_iterator(context().branch(static_cast<int64_t>(i))));
    }
  }

 protected:
  std::optional<Element> get_next() override {
    if (done_) return std::nullopt;
    Element out;
    for (auto& in : inputs_) {
      std::optional<Element> e = in->next();
      if (!e) {
        done_ = true;
        return std::nullopt;
      }
      for (Tensor& t : *e) out.push_back(std::move(t));
      if (out.origin.empty()) out.origin = std::move(e->origin);  // the first input that knows
    }
    return out;
  }
  void save_state(StateWriter& w) override {
    w.write_int("done", done_ ? 1 : 0);
    for (auto& in : inputs_) in->save(w);
  }
  void restore_state(StateReader& r) override {
    done_ = r.read_int("done") != 0;
    for (auto& in : inputs_) in->restore(r);
  }

 private:
  std::vector<std::unique_ptr<IteratorBase>> inputs_;
  bool done_ = false;
};

std::unique_ptr<IteratorBase> ZipDataset::make_stage_iterator(const IteratorContext& parent) const {
  return std::make_unique<ZipIterator>(parent, *this);
}

}  // namespace

DatasetPtr make_zip_dataset(std::vector<DatasetPtr> inputs) {
  return std::make_shared<ZipDataset>(std::move(inputs));
}

}  // namespace tern::data
