// shard: elements index, index + num_shards, index + 2 * num_shards, ... of the input, so that
// num_shards workers each reading their own shard cover the input exactly once.
#pragma once

#include "tern/data/dataset.h"

namespace tern::data {

DatasetPtr make_shard_dataset(DatasetPtr input, int64_t num_shards, int64_t index);

}  // namespace tern::data
