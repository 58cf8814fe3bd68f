// CacheDataset: an in-memory copy of the first complete pass.
#include "tern/data/cache_dataset.h"

#include <mutex>

#include "tern/base/error.h"
#include "tern/data/iterator_base.h"

namespace tern::data {
namespace {

struct CacheStore {
  std::mutex mu;
  bool complete = false;
  uint64_t fill_epoch_key = 0;  // epoch key of the pass that filled it
  std::vector<Element> elements;
};

class CacheDataset : public Dataset {
 public:
  explicit CacheDataset(DatasetPtr input)
      : input_(std::move(input)), store_(std::make_shared<CacheStore>()) {
    TERN_CHECK_ARG(input_ != nullptr, "cache: null input dataset");
  }
  std::string name() const override { return "Cache"; }
  int64_t cardinality() const override { return input_->cardinality(); }
  std::unique_ptr<IteratorBase> make_stage_iterator(const IteratorContext& parent) const override;

  const DatasetPtr input_;
  // Mutable by design: the one piece of a dataset that iterators fill in.
  const std::shared_ptr<CacheStore> store_;
};

class CacheIterator : public IteratorBase {
 public:
  CacheIterator(const IteratorContext& parent, const CacheDataset& ds)
      : IteratorBase(parent, ds.name()), ds_(ds), store_(*ds.store_) {
    std::lock_guard<std::mutex> lock(store_.mu);
    if (!store_.complete) input_ = ds_.input_->make_stage_iterator(context());
  }

 protected:
  std::optional<Element> get_next() override {
    if (!input_) {  // reading the cache
      std::lock_guard<std::mutex> lock(store_.mu);
      if (index_ >= static_cast<int64_t>(store_.elements.size())) return std::nullopt;
      return store_.elements[static_cast<size_t>(index_++)];
    }
    std::optional<Element> e = input_->next();
    if (e) {
      pending_.push_back(*e);
      return e;
    }
    commit(context().epoch_key);
    index_ = static_cast<int64_t>(pending_.size());
    pending_.clear();
    input_.reset();
    return std::nullopt;
  }

  void save_state(StateWriter& w) override {
    w.write_int("filling", input_ ? 1 : 0);
    if (input_) {
      input_->save(w);
      w.write_elements("pending", pending_);
      return;
    }
    std::lock_guard<std::mutex> lock(store_.mu);
    w.write_int("index", index_);
    w.write_int("fill_epoch_key", static_cast<int64_t>(store_.fill_epoch_key));
  }

  void restore_state(StateReader& r) override {
    if (r.read_int("filling") != 0) {
      input_ = ds_.input_->make_stage_iterator(context());
      input_->restore(r);
      pending_ = r.read_elements("pending");
      return;
    }
    input_.reset();
    pending_.clear();
    index_ = r.read_int("index");
    const uint64_t key = static_cast<uint64_t>(r.read_int("fill_epoch_key"));
    bool complete;
    {
      std::lock_guard<std::mutex> lock(store_.mu);
      complete = store_.complete;
    }
    if (!complete) refill(key);
    std::lock_guard<std::mutex> lock(store_.mu);
    TERN_CHECK_ARG(index_ >= 0 && index_ <= static_cast<int64_t>(store_.elements.size()),
                   "iterator state: cache index ", index_, " but the cache holds ",
                   store_.elements.size(), " elements");
  }

 private:
  void commit(uint64_t epoch_key) {
    std::lock_guard<std::mutex> lock(store_.mu);
    if (store_.complete) return;
    store_.elements = std::move(pending_);
    store_.fill_epoch_key = epoch_key;
    store_.complete = true;
  }

  // Re-runs the input as the filling pass did.
  void refill(uint64_t epoch_key) {
    IteratorContext ctx = context();
    ctx.epoch_key = epoch_key;
    std::unique_ptr<IteratorBase> in = ds_.input_->make_stage_iterator(ctx);
    while (std::optional<Element> e = in->next()) pending_.push_back(std::move(*e));
    commit(epoch_key);
    pending_.clear();
  }

  const CacheDataset& ds_;
  CacheStore& store_;
  std::unique_ptr<IteratorBase> input_;  // set while filling
  std::vector<Element> pending_;
  int64_t index_ = 0;
};

std::unique_ptr<IteratorBase> CacheDataset::make_stage_iterator(
    const IteratorContext& parent) const {
  return std::make_unique<CacheIterator>(parent, *this);
}

}  // namespace

DatasetPtr make_cache_dataset(DatasetPtr input) {
  return std::make_shared<CacheDataset>(std::move(input));
}

}  // namespace tern::data
