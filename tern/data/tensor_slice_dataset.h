// Sources over in-memory tensors: from_tensors (the element once) and from_tensor_slices (one
// element per row of the leading axis, sharing the tensors' storage).
#pragma once

#include <string>

#include "tern/data/dataset.h"

namespace tern::data {

DatasetPtr from_tensors(Element element);

// Where the rows of from_tensor_slices come from, for error messages: row i is record
// first + i * stride of `file` (the records of an IDX file; a worker's share takes every
// stride-th), or without a file "element first + i * stride".
struct SliceSource {
  std::string file;
  int64_t first = 0;
  int64_t stride = 1;
};
// Every component must have the same leading dim; element i is row i of each component.
DatasetPtr from_tensor_slices(Element components, SliceSource source = {});

}  // namespace tern::data
