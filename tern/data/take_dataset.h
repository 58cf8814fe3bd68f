// take: the first `count` elements of the input (count < 0: all of them).
#pragma once

#include "tern/data/dataset.h"

namespace tern::data {

DatasetPtr make_take_dataset(DatasetPtr input, int64_t count);

}  // namespace tern::data
