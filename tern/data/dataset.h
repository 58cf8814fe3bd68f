// Dataset: an immutable, shareable description of an input pipeline (tf.data in C++). Sources
// (from_tensor_slices, range, idx_dataset, ...) make one; the chain methods below wrap it in
// transforms, and make_iterator() runs it:
//
//   auto ds = from_tensor_slices({images, labels})
//                 ->shuffle(10000, /*seed=*/42)
//                 ->map(normalize, {.num_parallel_calls = 4})
//                 ->batch(32, /*drop_remainder=*/true)
//                 ->prefetch(kAutotune);
//   Iterator it = ds->make_iterator();
//   while (auto batch = it.next()) train_step(*batch);
//
// Datasets are always held by DatasetPtr (std::make_shared); they never change once built, so
// one may feed any number of iterators on any threads. Functions given to map/filter/interleave
// must be safe to call concurrently when parallelism is requested.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "tern/data/element.h"

namespace tern::data {

class Dataset;
class Iterator;
class IteratorBase;
struct IteratorContext;
using DatasetPtr = std::shared_ptr<const Dataset>;

using MapFn = std::function<Element(Element)>;
using PredicateFn = std::function<bool(const Element&)>;
using InterleaveFn = std::function<DatasetPtr(const Element&)>;

// Parallelism or buffer size chosen at run time from measured producer/consumer waits.
inline constexpr int64_t kAutotune = -1;
inline constexpr int64_t kInfiniteCardinality = -1;
inline constexpr int64_t kUnknownCardinality = -2;

struct MapOptions {
  // 0: run on the consumer's thread; N > 0: N worker threads; kAutotune: up to the core count.
  int64_t num_parallel_calls = 0;
  // false lets a parallel map return elements as they finish instead of in input order.
  bool deterministic = true;
};

struct PaddedBatchOptions {
  // Per component, the padded dims (-1: the largest in the batch); empty: all -1.
  std::vector<std::vector<int64_t>> padded_shapes;
  // Per component, the padding value (default 0).
  std::vector<double> padding_values;
  bool drop_remainder = false;
};

struct InterleaveOptions {
  int64_t cycle_length = 1;  // datasets open at once
  int64_t block_length = 1;  // consecutive elements taken from each before moving on
};

class Dataset : public std::enable_shared_from_this<Dataset> {
 public:
  virtual ~Dataset() = default;

  // The stage name used in statistics and state keys, e.g. "Map".
  virtual std::string name() const = 0;
  // Number of elements, or kInfiniteCardinality / kUnknownCardinality.
  virtual int64_t cardinality() const = 0;
  // An iterator at the first element, created by the stage whose context is `parent`.
  virtual std::unique_ptr<IteratorBase> make_stage_iterator(
      const IteratorContext& parent) const = 0;

  // Runs the pipeline. `epoch` seeds reshuffling shuffles, so a training loop that makes one
  // iterator per epoch gets a new order each epoch (and the same order for the same epoch).
  Iterator make_iterator(uint64_t epoch = 0) const;

  // --- transforms ---
  DatasetPtr map(MapFn fn, MapOptions options = {}) const;
  DatasetPtr filter(PredicateFn predicate) const;
  // Fills a buffer of `buffer_size` elements and draws from it uniformly (Philox, `seed`).
  DatasetPtr shuffle(int64_t buffer_size, uint64_t seed,
                     bool reshuffle_each_iteration = true) const;
  DatasetPtr batch(int64_t batch_size, bool drop_remainder = false) const;
  DatasetPtr padded_batch(int64_t batch_size, PaddedBatchOptions options = {}) const;
  // Splits elements along the leading axis (the inverse of batch).
  DatasetPtr unbatch() const;
  // count < 0 repeats forever (an input that yields nothing ends the repeat).
  DatasetPtr repeat(int64_t count = -1) const;
  DatasetPtr take(int64_t count) const;
  DatasetPtr skip(int64_t count) const;
  // Produces up to `buffer_size` elements ahead on a background thread.
  DatasetPtr prefetch(int64_t buffer_size = kAutotune) const;
  // Every num_shards-th element starting at `index`.
  DatasetPtr shard(int64_t num_shards, int64_t index) const;
  // The first complete pass is kept in memory; later iterators read the copy.
  DatasetPtr cache() const;
  // This dataset's elements, then `other`'s.
  DatasetPtr concatenate(DatasetPtr other) const;
  // Maps each element to a dataset and interleaves their elements.
  DatasetPtr interleave(InterleaveFn fn, InterleaveOptions options = {}) const;

 protected:
  DatasetPtr self() const { return shared_from_this(); }
};

// Element-wise tuple of several datasets (components concatenated); ends with the shortest.
DatasetPtr zip(std::vector<DatasetPtr> datasets);

}  // namespace tern::data
