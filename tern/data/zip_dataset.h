// zip: element i is the components of element i of every input, concatenated in order; it ends
// with the shortest input.
#pragma once

#include <vector>

#include "tern/data/dataset.h"

namespace tern::data {

DatasetPtr make_zip_dataset(std::vector<DatasetPtr> inputs);

}  // namespace tern::data
