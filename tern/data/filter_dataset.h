// filter: keeps the elements for which the predicate returns true.
#pragma once

#include "tern/data/dataset.h"

namespace tern::data {

DatasetPtr make_filter_dataset(DatasetPtr input, PredicateFn predicate);

}  // namespace tern::data
