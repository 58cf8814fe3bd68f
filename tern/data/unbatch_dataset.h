// unbatch: splits every element along its leading axis into that many elements (the inverse of
// batch). Every component must have the same leading dim.
#pragma once

#include "tern/data/dataset.h"

namespace tern::data {

DatasetPtr make_unbatch_dataset(DatasetPtr input);

}  // namespace tern::data
