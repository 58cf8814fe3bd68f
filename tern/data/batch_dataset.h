// batch: stacks `batch_size` consecutive elements along a new leading axis; the last batch may
// be smaller unless drop_remainder. Components must agree in dtype and shape within a batch.
#pragma once

#include "tern/data/dataset.h"

namespace tern::data {

DatasetPtr make_batch_dataset(DatasetPtr input, int64_t batch_size, bool drop_remainder);

}  // namespace tern::data
