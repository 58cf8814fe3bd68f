// Index tensors (i32 / i64) as kernels read them, and the range check every indexing kernel
// (gather, scatter_add: ref and the fast ones) makes with the same message.
#pragma once

#include <cstdint>

#include "tern/base/error.h"
#include "tern/tensor/tensor.h"

namespace tern::kernels {

// Index i of an i32/i64 tensor as int64.
inline int64_t index_at(const Tensor& indices, int64_t i) {
  return indices.dtype() == DType::kI32 ? indices.data<int32_t>()[i] : indices.data<int64_t>()[i];
}

// Checks every index against [0, limit): InvalidArgument naming the op, the first bad index, its
// position and `what()` (the axis it indexes; only built for the message).
template <typename What>
void check_indices(const char* op, const Tensor& indices, int64_t limit, const What& what) {
  for (int64_t i = 0; i < indices.num_elements(); ++i) {
    const int64_t v = index_at(indices, i);
    if (v < 0 || v >= limit) {
      throw_error(ErrorCode::kInvalidArgument, "op '", op, "': index ", v, " at position ", i,
                  " of indices ", indices.shape(), " is out of range [0, ", limit, ") for ",
                  what());
    }
  }
}

}  // namespace tern::kernels
