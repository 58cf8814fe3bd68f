// The sizes and attributes of an attention / attention_grad node (tern/ops/attention_ops.cc), in
// one place for its shape inference, its reference kernel and its fast kernels: q [B, T, H, D],
// k [B, S, H, D], v [B, S, H, Dv], the probabilities [B, H, T, S].
#pragma once

#include <cmath>
#include <cstdint>

#include "tern/ops/attrs.h"
#include "tern/tensor/shape.h"

namespace tern::ops {

struct AttentionGeometry {
  int64_t b = 0, t = 0, s = 0, h = 0, d = 0, dv = 0;
  double scale = 1, rate = 0;
  bool causal = false;

  // From q's and v's shapes (checked by inference before) and the node's attributes.
  AttentionGeometry(const Shape& q, const Shape& v, const Attrs& attrs)
      : b(q[0]),
        t(q[1]),
        s(v[1]),
        h(q[2]),
        d(q[3]),
        dv(v[3]),
        scale(attrs.get_float("scale")),
        rate(attrs.get_float("rate")),
        causal(attrs.get_bool("causal")) {}

  int64_t pairs() const { return b * h; }  // (batch, head) pairs
  int64_t block() const { return t * s; }  // probabilities per pair
  // dropout's packed mask: 32 of the [B, H, T, S] probabilities per i32 word.
  int64_t mask_words() const { return (pairs() * block() + 31) / 32; }
  // Element (n, row, head, c) of a [B, rows, H, width] tensor; rows of one head are h * width
  // apart.
  int64_t at(int64_t n, int64_t row, int64_t rows, int64_t head, int64_t width,
             int64_t c = 0) const {
    return ((n * rows + row) * h + head) * width + c;
  }
  // The dropout op's rule: element e is kept iff its Philox word >= floor(rate * 2^32), and kept
  // elements are scaled by 1 / (1 - rate).
  uint32_t dropout_threshold() const {
    return static_cast<uint32_t>(std::floor(rate * 4294967296.0));
  }
  double inv_keep() const { return 1.0 / (1.0 - rate); }
};

}  // namespace tern::ops
