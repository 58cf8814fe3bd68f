// concatenate: the elements of the first input, then those of the second. Both must yield
// elements with the same number of components and dtypes (shapes may differ).
#pragma once

#include "tern/data/dataset.h"

namespace tern::data {

DatasetPtr make_concatenate_dataset(DatasetPtr first, DatasetPtr second);

}  // namespace tern::data
