// Sources over in-memory tensors: from_tensors (the element once) and from_tensor_slices (one
// element per row of the leading axis, sharing the tensors' storage).
#pragma once

#include "tern/data/dataset.h"

namespace tern::data {

DatasetPtr from_tensors(Element element);
// Every component must have the same leading dim; element i is row i of each component.
DatasetPtr from_tensor_slices(Element components);

}  // namespace tern::data
