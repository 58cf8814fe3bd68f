// Shape-family helpers shared by inference, reference kernels and gradient rules: NumPy-style
// normalization of strided_slice ranges.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tern/tensor/shape.h"

namespace tern::ops {

// One dim of a strided slice: `size` elements at begin, begin + stride, ... of the input dim.
struct StridedDim {
  int64_t begin = 0;
  int64_t stride = 1;
  int64_t size = 0;
};

// Normalizes strided_slice attributes for input shape `in` like NumPy basic slicing: negative
// begin/end count from the end, out-of-range values clamp, a negative stride walks backwards (an
// end below -dim means "through index 0"). Dims past the attribute lists are taken whole.
// On bad attributes sets `error` to a non-empty message (lists of different lengths, longer than
// the rank, or a zero stride) and returns an empty vector.
std::vector<StridedDim> strided_slice_dims(const Shape& in, const std::vector<int64_t>& begin,
                                           const std::vector<int64_t>& end,
                                           const std::vector<int64_t>& strides, std::string* error);

}  // namespace tern::ops
