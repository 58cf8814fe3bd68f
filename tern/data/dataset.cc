// Dataset chain methods: each wraps `this` in a transform dataset.
#include "tern/data/dataset.h"

#include "tern/data/batch_dataset.h"
#include "tern/data/cache_dataset.h"
#include "tern/data/concatenate_dataset.h"
#include "tern/data/filter_dataset.h"
#include "tern/data/interleave_dataset.h"
#include "tern/data/map_dataset.h"
#include "tern/data/padded_batch_dataset.h"
#include "tern/data/prefetch_dataset.h"
#include "tern/data/repeat_dataset.h"
#include "tern/data/shard_dataset.h"
#include "tern/data/shuffle_dataset.h"
#include "tern/data/skip_dataset.h"
#include "tern/data/take_dataset.h"
#include "tern/data/unbatch_dataset.h"
#include "tern/data/zip_dataset.h"

namespace tern::data {

DatasetPtr Dataset::map(MapFn fn, MapOptions options) const {
  return make_map_dataset(self(), std::move(fn), options);
}
DatasetPtr Dataset::filter(PredicateFn predicate) const {
  return make_filter_dataset(self(), std::move(predicate));
}
DatasetPtr Dataset::shuffle(int64_t buffer_size, uint64_t seed,
                            bool reshuffle_each_iteration) const {
  return make_shuffle_dataset(self(), buffer_size, seed, reshuffle_each_iteration);
}
DatasetPtr Dataset::batch(int64_t batch_size, bool drop_remainder) const {
  return make_batch_dataset(self(), batch_size, drop_remainder);
}
DatasetPtr Dataset::repeat(int64_t count) const {
  return make_repeat_dataset(self(), count);
}
DatasetPtr Dataset::take(int64_t count) const {
  return make_take_dataset(self(), count);
}
DatasetPtr Dataset::skip(int64_t count) const {
  return make_skip_dataset(self(), count);
}
DatasetPtr Dataset::prefetch(int64_t buffer_size) const {
  return make_prefetch_dataset(self(), buffer_size);
}

DatasetPtr Dataset::padded_batch(int64_t batch_size, PaddedBatchOptions options) const {
  return make_padded_batch_dataset(self(), batch_size, std::move(options));
}
DatasetPtr Dataset::unbatch() const {
  return make_unbatch_dataset(self());
}
DatasetPtr Dataset::shard(int64_t num_shards, int64_t index) const {
  return make_shard_dataset(self(), num_shards, index);
}
DatasetPtr Dataset::cache() const {
  return make_cache_dataset(self());
}
DatasetPtr Dataset::concatenate(DatasetPtr other) const {
  return make_concatenate_dataset(self(), std::move(other));
}
DatasetPtr Dataset::interleave(InterleaveFn fn, InterleaveOptions options) const {
  return make_interleave_dataset(self(), std::move(fn), options);
}

DatasetPtr zip(std::vector<DatasetPtr> datasets) {
  return make_zip_dataset(std::move(datasets));
}

}  // namespace tern::data
