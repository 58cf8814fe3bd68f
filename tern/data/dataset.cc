// Dataset chain methods: each wraps `this` in a transform dataset.
#include "tern/data/dataset.h"

#include "tern/data/batch_dataset.h"
#include "tern/data/filter_dataset.h"
#include "tern/data/map_dataset.h"
#include "tern/data/prefetch_dataset.h"
#include "tern/data/repeat_dataset.h"
#include "tern/data/shuffle_dataset.h"
#include "tern/data/skip_dataset.h"
#include "tern/data/take_dataset.h"

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

}  // namespace tern::data
