// skip: the input without its first `count` elements (count < 0: skips everything).
#pragma once

#include "tern/data/dataset.h"

namespace tern::data {

DatasetPtr make_skip_dataset(DatasetPtr input, int64_t count);

}  // namespace tern::data
