// prefetch: a background thread produces up to `buffer_size` elements ahead of the consumer
// (kAutotune: the depth grows while the consumer waits, up to max(2, core count)). The thread
// starts on the first next(); saving or destroying the iterator stops it (after the input call in
// progress returns), so a pipeline abandoned mid-stream shuts down cleanly.
#pragma once

#include "tern/data/dataset.h"

namespace tern::data {

DatasetPtr make_prefetch_dataset(DatasetPtr input, int64_t buffer_size);

}  // namespace tern::data
