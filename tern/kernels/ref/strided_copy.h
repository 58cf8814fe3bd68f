// Strided element copies shared by the shape-family reference kernels (transpose, broadcast_to,
// slice, strided_slice, pad, ...). Data movement does not care about the element type, only its
// size, so kernels dispatch on the size with dispatch_elem_size.
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

#include "tern/tensor/dtype.h"

namespace tern::kernels::ref {

// Calls fn(E{}) with E an unsigned integer as wide as one element of `dtype`.
template <typename Fn>
decltype(auto) dispatch_elem_size(DType dtype, Fn&& fn) {
  switch (dtype_size(dtype)) {
    case 1:
      return fn(uint8_t{});
    case 2:
      return fn(uint16_t{});
    case 4:
      return fn(uint32_t{});
    case 8:
      return fn(uint64_t{});
    default:
      break;
  }
  throw_error(ErrorCode::kInternal, "unexpected element size ", dtype_size(dtype));
}

// Walks the dense index space `dims` in row-major order; for each element calls
// fn(dense_index, strided_offset) where strided_offset = base + sum(index[k] * strides[k]).
template <typename Fn>
void for_each_strided(const std::vector<int64_t>& dims, const std::vector<int64_t>& strides,
                      int64_t base, Fn&& fn) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  if (n == 0) return;
  if (dims.empty()) {
    fn(int64_t{0}, base);
    return;
  }
  size_t r = dims.size();
  int64_t last = dims[r - 1], last_stride = strides[r - 1];
  std::vector<int64_t> counter(r, 0);
  int64_t offset = base;
  for (int64_t i = 0; i < n; i += last) {
    for (int64_t j = 0; j < last; ++j) fn(i + j, offset + j * last_stride);
    for (size_t k = r - 1; k-- > 0;) {
      offset += strides[k];
      if (++counter[k] < dims[k]) break;
      offset -= strides[k] * dims[k];
      counter[k] = 0;
    }
  }
}

// dst (dense over dims)[i] = src[base + sum(index[k] * src_strides[k])].
template <typename E>
void gather_strided(const E* src, int64_t base, const std::vector<int64_t>& src_strides, E* dst,
                    const std::vector<int64_t>& dims) {
  for_each_strided(dims, src_strides, base, [&](int64_t i, int64_t s) { dst[i] = src[s]; });
}

// dst[base + sum(index[k] * dst_strides[k])] = src (dense over dims)[i].
template <typename E>
void scatter_strided(const E* src, E* dst, int64_t base, const std::vector<int64_t>& dst_strides,
                     const std::vector<int64_t>& dims) {
  for_each_strided(dims, dst_strides, base, [&](int64_t i, int64_t d) { dst[d] = src[i]; });
}

// Copies `bytes` from src to dst unless they are the same buffer (in-place reshape).
inline void copy_bytes(void* dst, const void* src, size_t bytes) {
  if (dst != src && bytes > 0) std::memmove(dst, src, bytes);
}

}  // namespace tern::kernels::ref
