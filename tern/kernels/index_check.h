// Index tensors (i32 / i64) as kernels read them, and the range check every indexing kernel
// (gather, scatter_add, embedding, max_pool2d_grad_argmax: ref and the fast ones) makes with the
// same message.
#pragma once

#include <cstdint>
#include <string_view>

#include "tern/base/error.h"
#include "tern/base/row_error.h"
#include "tern/ops/conv_geometry.h"
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

// embedding's check (ref and the fast kernel): every id in [0, vocab), else a row error naming the
// first bad id, its position and its row (ids are [batch, ...] when fed from a batch).
inline void check_embedding_ids(const Tensor& ids, int64_t vocab) {
  const int64_t rows = ids.rank() >= 1 ? ids.shape()[0] : 1;
  const int64_t per_row = rows > 0 ? ids.num_elements() / rows : 1;
  for (int64_t p = 0; p < ids.num_elements(); ++p) {
    const int64_t id = index_at(ids, p);
    if (id < 0 || id >= vocab) {
      const int64_t row = per_row > 0 ? p / per_row : 0;
      throw_row_error(ErrorCode::kInvalidArgument, row, rows, "embedding: id ", id, " at position ",
                      p, " (row ", row, " of ids ", ids.shape(), ") is out of range [0, ", vocab,
                      ")");
    }
  }
}

// max_pool2d_grad_argmax's check (ref and the fast kernel): every argmax names a position of its
// window (below kh * kw) that lies inside x, else InvalidArgument naming the first bad one, its
// flat position and its output element (n, oh, ow, c); `op` names the op in the message.
inline void check_pool_argmax(const ops::Pool2dGeometry& g, const uint8_t* argmax,
                              std::string_view op = "max_pool2d_grad_argmax") {
  const int64_t window = g.kh * g.kw, total = g.n * g.out_h * g.out_w * g.c;
  // Windows that all lie inside x (no padding taken, the last one within x): the bound is enough,
  // checked as one maximum over the bytes.
  const bool inside = g.pad_top == 0 && g.pad_left == 0 &&
                      (g.out_h - 1) * g.stride_h + g.kh <= g.h &&
                      (g.out_w - 1) * g.stride_w + g.kw <= g.w;
  if (inside) {
    uint8_t most = 0;
    for (int64_t i = 0; i < total; ++i) most = argmax[i] > most ? argmax[i] : most;
    if (most < window) return;
  }
  for (int64_t i = 0; i < total; ++i) {
    const int64_t c = i % g.c, ow = i / g.c % g.out_w, oh = i / (g.c * g.out_w) % g.out_h,
                  n = i / (g.c * g.out_w * g.out_h);
    const int64_t pos = argmax[i], h = oh * g.stride_h - g.pad_top + pos / g.kw,
                  w = ow * g.stride_w - g.pad_left + pos % g.kw;
    if (pos >= window || h < 0 || h >= g.h || w < 0 || w >= g.w) {
      throw_error(ErrorCode::kInvalidArgument, "op '", op, "': argmax ", pos, " at position ", i,
                  " (output [", n, ", ", oh, ", ", ow, ", ", c, "]) ",
                  pos >= window ? str_cat("is not a position of a ", g.kh, "x", g.kw, " window")
                                : std::string("names a padding position"),
                  " (x ", g.input_shape(), ")");
    }
  }
}

}  // namespace tern::kernels
