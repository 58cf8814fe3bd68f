// Shared inference helpers.
#include "tern/ops/infer.h"

#include <algorithm>

namespace tern::ops {

std::vector<TensorType> infer_same_as_input(const InferContext& ctx, size_t i) {
  return {ctx.input(i)};
}

void require_same_dtype(const InferContext& ctx, size_t a, size_t b) {
  if (ctx.input(a).dtype != ctx.input(b).dtype) {
    ctx.fail("inputs ", a, " and ", b, " have different dtypes (", dtype_name(ctx.input(a).dtype),
             " vs ", dtype_name(ctx.input(b).dtype), ")");
  }
}

void require_same_type(const InferContext& ctx, size_t a, size_t b) {
  require_same_dtype(ctx, a, b);
  if (ctx.input(a).shape != ctx.input(b).shape) {
    ctx.fail("inputs ", a, " and ", b, " have different shapes (", ctx.input(a).shape, " vs ",
             ctx.input(b).shape, ")");
  }
}

void require_rank(const InferContext& ctx, size_t i, int rank) {
  if (ctx.input(i).shape.rank() != rank) {
    ctx.fail("input ", i, " must have rank ", rank, ", got shape ", ctx.input(i).shape);
  }
}

std::vector<TensorType> infer_broadcast(const InferContext& ctx, DType out_dtype) {
  Shape s = ctx.input(0).shape;
  for (size_t i = 1; i < ctx.inputs.size(); ++i) {
    require_same_dtype(ctx, 0, i);
    const Shape& o = ctx.input(i).shape;
    try {
      s = broadcast_shapes(s, o);
    } catch (const Error&) {
      ctx.fail("shapes ", ctx.input(0).shape, " and ", o, " cannot be broadcast");
    }
  }
  return {{out_dtype, s}};
}

std::vector<int> reduction_axes(const InferContext& ctx, const std::vector<int64_t>& axes, int r) {
  std::vector<int> out;
  if (axes.empty()) {
    for (int i = 0; i < r; ++i) out.push_back(i);
    return out;
  }
  for (int64_t a : axes) {
    if (a < -r || a >= r) ctx.fail("axis ", a, " is out of range for rank ", r);
    out.push_back(static_cast<int>(a < 0 ? a + r : a));
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace tern::ops
