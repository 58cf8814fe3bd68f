// range: i64 scalars start, start + step, ... up to (not including) stop, like Python's range.
#pragma once

#include "tern/data/dataset.h"

namespace tern::data {

DatasetPtr range(int64_t stop);
DatasetPtr range(int64_t start, int64_t stop, int64_t step = 1);

}  // namespace tern::data
