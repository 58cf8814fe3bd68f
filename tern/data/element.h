// Element: one item of a dataset, a tuple of tensor components; helpers for byte strings carried
// as u8 tensors (file names, raw records) and for stacking elements into batches.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "tern/tensor/tensor.h"

namespace tern::data {

using Element = std::vector<Tensor>;

// A rank-1 u8 tensor holding the bytes of `s` (tern has no string dtype).
Tensor bytes_tensor(std::string_view s);
// The bytes of a u8 tensor of any rank; InvalidArgument naming `what` for other dtypes.
std::string tensor_bytes(const Tensor& t, std::string_view what = "bytes tensor");

// "(u8[28, 28], i64[])": the component types, for error messages.
std::string element_signature(const Element& e);

// Stacks component k of every element along a new leading axis. All elements must have the same
// arity and, per component, the same dtype and shape; InvalidArgument naming `what` otherwise.
Element stack_elements(const std::vector<Element>& elements, std::string_view what);

// The inverse of stacking: row i of every component (all must share the leading dim).
Element element_row(const Element& batch, int64_t row);
// The shared leading dim of every component; InvalidArgument naming `what` if absent or unequal.
int64_t leading_dim(const Element& e, std::string_view what);

}  // namespace tern::data
