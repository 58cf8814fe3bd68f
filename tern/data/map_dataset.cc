// MapDataset: map on the consumer's thread, or through ParallelMapIterator.
#include "tern/data/map_dataset.h"

#include "tern/base/error.h"
#include "tern/data/iterator_base.h"
#include "tern/data/parallel_map_iterator.h"

namespace tern::data {
namespace {

// `fn` that keeps the input's origin when it returns an element without one, and names the
// element's position in its errors (unless the message already does, or the element is a batch:
// a function over a batch names the row itself).
MapFn keeping_origin(MapFn fn) {
  return [fn = std::move(fn)](Element e) {
    ElementOrigin origin = e.origin;
    try {
      Element out = fn(std::move(e));
      if (out.origin.empty()) out.origin = std::move(origin);
      return out;
    } catch (const Error& err) {
      if (origin.size() != 1) throw;
      const std::string where = describe_position(origin[0]);
      if (err.message().find(where) != std::string::npos) throw;
      throw_error(err.code(), err.message(), " (at ", where, ")");
    }
  };
}

class MapDataset : public Dataset {
 public:
  MapDataset(DatasetPtr input, MapFn fn, MapOptions options)
      : input_(std::move(input)),
        fn_(fn ? keeping_origin(std::move(fn)) : nullptr),
        options_(options) {
    TERN_CHECK_ARG(input_ != nullptr, "map: null input dataset");
    TERN_CHECK_ARG(fn_ != nullptr, "map: empty function");
    TERN_CHECK_ARG(options.num_parallel_calls >= 0 || options.num_parallel_calls == kAutotune,
                   "map: num_parallel_calls must be >= 0 or kAutotune, got ",
                   options.num_parallel_calls);
  }
  std::string name() const override {
    return options_.num_parallel_calls == 0 ? "Map" : "ParallelMap";
  }
  int64_t cardinality() const override { return input_->cardinality(); }
  std::unique_ptr<IteratorBase> make_stage_iterator(const IteratorContext& parent) const override;

  const DatasetPtr input_;
  const MapFn fn_;
  const MapOptions options_;
};

class MapIterator : public IteratorBase {
 public:
  MapIterator(const IteratorContext& parent, const MapDataset& ds)
      : IteratorBase(parent, ds.name()),
        ds_(ds),
        input_(ds.input_->make_stage_iterator(context())) {}

 protected:
  std::optional<Element> get_next() override {
    std::optional<Element> e = input_->next();
    if (!e) return std::nullopt;
    return ds_.fn_(std::move(*e));
  }
  void save_state(StateWriter& w) override { input_->save(w); }
  void restore_state(StateReader& r) override { input_->restore(r); }

 private:
  const MapDataset& ds_;
  std::unique_ptr<IteratorBase> input_;
};

std::unique_ptr<IteratorBase> MapDataset::make_stage_iterator(const IteratorContext& parent) const {
  if (options_.num_parallel_calls == 0) return std::make_unique<MapIterator>(parent, *this);
  return std::make_unique<ParallelMapIterator>(parent, name(), *input_, fn_, options_);
}

}  // namespace

DatasetPtr make_map_dataset(DatasetPtr input, MapFn fn, MapOptions options) {
  return std::make_shared<MapDataset>(std::move(input), std::move(fn), options);
}

}  // namespace tern::data
