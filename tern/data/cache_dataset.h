// cache (memory): the first iterator to run the input to its end stores every element; later
// iterators (later epochs under repeat, new iterators) read the stored copy. Elements share
// storage with the cache, so treat them as read-only. Restoring a position inside a cached pass
// in a fresh process refills the cache by re-running the input (with the epoch it was filled
// in), so the input must be deterministic for exact resume.
#pragma once

#include "tern/data/dataset.h"

namespace tern::data {

DatasetPtr make_cache_dataset(DatasetPtr input);

}  // namespace tern::data
