// shape op family, indexing part: slice, strided_slice (+ strided_slice_grad), gather,
// scatter_add, one_hot, pad; and the NumPy-style strided range normalization (shape_ops.h).
#include <algorithm>
#include <limits>

#include "tern/ops/families.h"
#include "tern/ops/infer.h"
#include "tern/ops/registry.h"
#include "tern/ops/shape_ops.h"

namespace tern::ops {

std::vector<StridedDim> strided_slice_dims(const Shape& in, const std::vector<int64_t>& begin,
                                           const std::vector<int64_t>& end,
                                           const std::vector<int64_t>& strides,
                                           std::string* error) {
  size_t n = begin.size();
  if (end.size() != n || (!strides.empty() && strides.size() != n)) {
    *error = str_cat("begin, end and strides have different lengths (", begin.size(), ", ",
                     end.size(), ", ", strides.size(), ")");
    return {};
  }
  if (n > static_cast<size_t>(in.rank())) {
    *error = str_cat("begin has ", n, " entries for rank ", in.rank());
    return {};
  }
  std::vector<StridedDim> out;
  for (int k = 0; k < in.rank(); ++k) {
    int64_t d = in.dim(k);
    size_t u = static_cast<size_t>(k);
    if (u >= n) {
      out.push_back({0, 1, d});
      continue;
    }
    int64_t s = strides.empty() ? 1 : strides[u];
    if (s == 0 || s == std::numeric_limits<int64_t>::min()) {
      *error = str_cat("stride ", s, " of dim ", k, " is not allowed");
      return {};
    }
    int64_t b = begin[u], e = end[u];
    if (b < 0) b += d;
    if (e < 0) e += d;
    StridedDim dim{0, s, 0};
    if (s > 0) {
      b = std::clamp<int64_t>(b, 0, d);
      e = std::clamp<int64_t>(e, 0, d);
      dim.begin = b;
      dim.size = e > b ? 1 + (e - b - 1) / s : 0;
    } else {
      b = std::clamp<int64_t>(b, -1, d - 1);
      e = std::clamp<int64_t>(e, -1, d - 1);
      dim.begin = b;
      dim.size = b > e ? 1 + (b - e - 1) / -s : 0;
    }
    if (dim.size == 0) dim.begin = 0;
    out.push_back(dim);
  }
  return out;
}

namespace {

std::vector<TensorType> infer_slice(const InferContext& ctx) {
  const Shape& in = ctx.input(0).shape;
  const std::vector<int64_t>& begin = ctx.attrs.get_ints("begin");
  const std::vector<int64_t>& size = ctx.attrs.get_ints("size");
  if (static_cast<int>(begin.size()) != in.rank() || static_cast<int>(size.size()) != in.rank()) {
    ctx.fail("begin and size need ", in.rank(), " entries each, got ", begin.size(), " and ",
             size.size());
  }
  std::vector<int64_t> dims;
  for (int k = 0; k < in.rank(); ++k) {
    int64_t b = begin[static_cast<size_t>(k)], s = size[static_cast<size_t>(k)], d = in.dim(k);
    if (b < 0 || b > d) ctx.fail("begin ", b, " is out of range [0, ", d, "] for dim ", k);
    if (s == -1) s = d - b;
    if (s < 0 || s > d - b) {
      ctx.fail("size ", s, " at begin ", b, " exceeds dim ", k, " of size ", d);
    }
    dims.push_back(s);
  }
  return {{ctx.input(0).dtype, Shape(dims)}};
}

// The strided dims of a strided_slice over `in`, failing on bad attributes.
std::vector<StridedDim> checked_strided_dims(const InferContext& ctx, const Shape& in) {
  std::string error;
  std::vector<StridedDim> dims =
      strided_slice_dims(in, ctx.attrs.get_ints("begin"), ctx.attrs.get_ints("end"),
                         ctx.attrs.get_ints("strides"), &error);
  if (!error.empty()) ctx.fail(error);
  return dims;
}

std::vector<TensorType> infer_strided_slice(const InferContext& ctx) {
  std::vector<int64_t> out;
  for (const StridedDim& d : checked_strided_dims(ctx, ctx.input(0).shape)) out.push_back(d.size);
  return {{ctx.input(0).dtype, Shape(out)}};
}

std::vector<TensorType> infer_strided_slice_grad(const InferContext& ctx) {
  const std::vector<int64_t>& dims = ctx.attrs.get_ints("shape");
  for (int64_t d : dims) {
    if (d < 0) ctx.fail("shape has a negative dim ", d);
  }
  Shape full(dims);
  std::vector<int64_t> sliced;
  for (const StridedDim& d : checked_strided_dims(ctx, full)) sliced.push_back(d.size);
  if (Shape(sliced) != ctx.input(0).shape) {
    ctx.fail("dy has shape ", ctx.input(0).shape, " but the slice of ", full, " has shape ",
             Shape(sliced));
  }
  return {{ctx.input(0).dtype, full}};
}

void require_index_dtype(const InferContext& ctx, size_t i) {
  DType d = ctx.input(i).dtype;
  if (d != DType::kI32 && d != DType::kI64) {
    ctx.fail("input ", i, " (indices) must be i32 or i64, got ", dtype_name(d));
  }
}

std::vector<TensorType> infer_gather(const InferContext& ctx) {
  require_index_dtype(ctx, 1);
  const Shape& params = ctx.input(0).shape;
  const Shape& indices = ctx.input(1).shape;
  int64_t axis = ctx.attrs.get_int("axis");
  if (axis < -params.rank() || axis >= params.rank()) {
    ctx.fail("axis ", axis, " is out of range for params of rank ", params.rank());
  }
  int a = static_cast<int>(axis < 0 ? axis + params.rank() : axis);
  std::vector<int64_t> dims(params.dims().begin(), params.dims().begin() + a);
  dims.insert(dims.end(), indices.dims().begin(), indices.dims().end());
  dims.insert(dims.end(), params.dims().begin() + a + 1, params.dims().end());
  return {{ctx.input(0).dtype, Shape(dims)}};
}

std::vector<TensorType> infer_scatter_add(const InferContext& ctx) {
  require_index_dtype(ctx, 0);
  const std::vector<int64_t>& dims = ctx.attrs.get_ints("shape");
  if (dims.empty()) ctx.fail("shape must have rank >= 1");
  for (int64_t d : dims) {
    if (d < 0) ctx.fail("shape has a negative dim ", d);
  }
  std::vector<int64_t> want = ctx.input(0).shape.dims();
  want.insert(want.end(), dims.begin() + 1, dims.end());
  if (Shape(want) != ctx.input(1).shape) {
    ctx.fail("updates must have shape indices.shape + shape[1:] = ", Shape(want), " for shape ",
             Shape(dims));
  }
  return {{ctx.input(1).dtype, Shape(dims)}};
}

std::vector<TensorType> infer_one_hot(const InferContext& ctx) {
  require_index_dtype(ctx, 0);
  int64_t depth = ctx.attrs.get_int("depth");
  if (depth < 0) ctx.fail("depth ", depth, " must be >= 0");
  std::vector<int64_t> dims = ctx.input(0).shape.dims();
  dims.push_back(depth);
  return {{ctx.attrs.get_dtype("dtype"), Shape(dims)}};
}

std::vector<TensorType> infer_pad(const InferContext& ctx) {
  const Shape& in = ctx.input(0).shape;
  const std::vector<int64_t>& pads = ctx.attrs.get_ints("paddings");
  if (pads.size() != 2 * static_cast<size_t>(in.rank())) {
    ctx.fail("paddings need 2 entries (before, after) per dim: ", 2 * in.rank(), ", got ",
             pads.size());
  }
  std::vector<int64_t> dims;
  for (int k = 0; k < in.rank(); ++k) {
    int64_t before = pads[2 * static_cast<size_t>(k)], after = pads[2 * static_cast<size_t>(k) + 1];
    if (before < 0 || after < 0) ctx.fail("paddings of dim ", k, " must be >= 0");
    int64_t d;
    if (__builtin_add_overflow(in.dim(k), before, &d) || __builtin_add_overflow(d, after, &d)) {
      ctx.fail("padded dim ", k, " overflows");
    }
    dims.push_back(d);
  }
  return {{ctx.input(0).dtype, Shape(dims)}};
}

}  // namespace

void register_shape_index_ops(OpRegistry& r) {
  r.add(
      {.name = "slice",
       .family = "shape",
       .doc = "x[begin : begin + size] per dim; size -1 = to the end.",
       .inputs = {"x"},
       .attrs = {{"begin", AttrKind::kInts, std::nullopt}, {"size", AttrKind::kInts, std::nullopt}},
       .dtypes = kAllDTypeList,
       .infer = infer_slice});
  r.add({.name = "strided_slice",
         .family = "shape",
         .doc = "x[begin:end:stride] per dim, NumPy semantics (clamped; strides [] = all 1).",
         .inputs = {"x"},
         .attrs = {{"begin", AttrKind::kInts, std::nullopt},
                   {"end", AttrKind::kInts, std::nullopt},
                   {"strides", AttrKind::kInts, std::vector<int64_t>{}}},
         .dtypes = kAllDTypeList,
         .infer = infer_strided_slice});
  r.add({.name = "strided_slice_grad",
         .family = "shape",
         .doc = "Gradient of strided_slice: zeros(shape) with dy placed at the sliced positions.",
         .inputs = {"dy"},
         .attrs = {{"shape", AttrKind::kInts, std::nullopt},
                   {"begin", AttrKind::kInts, std::nullopt},
                   {"end", AttrKind::kInts, std::nullopt},
                   {"strides", AttrKind::kInts, std::vector<int64_t>{}}},
         .dtypes = kAllDTypeList,
         .infer = infer_strided_slice_grad});
  r.add({.name = "gather",
         .family = "shape",
         .doc = "Slices of params at integer indices along axis; out of range is an error.",
         .inputs = {"params", "indices"},
         .attrs = {{"axis", AttrKind::kInt, int64_t{0}}},
         .dtypes = kAllDTypeList,
         .infer = infer_gather});
  r.add({.name = "scatter_add",
         .family = "shape",
         .doc = "zeros(shape) with updates rows summed at indices along axis 0.",
         .inputs = {"indices", "updates"},
         .attrs = {{"shape", AttrKind::kInts, std::nullopt}},
         .dtypes = kNumericDTypes,
         .key_input = 1,
         .infer = infer_scatter_add});
  r.add({.name = "one_hot",
         .family = "shape",
         .doc = "indices.shape + [depth]: on_value where the last index equals indices, else "
                "off_value (indices outside [0, depth) give an all-off row).",
         .inputs = {"indices"},
         .attrs = {{"depth", AttrKind::kInt, std::nullopt},
                   {"on_value", AttrKind::kFloat, 1.0},
                   {"off_value", AttrKind::kFloat, 0.0},
                   {"dtype", AttrKind::kDType, DType::kF32}},
         .dtypes = kAllDTypeList,
         .key_input = -1,
         .traits = kTraitNotDifferentiable,
         .infer = infer_one_hot});
  r.add(
      {.name = "pad",
       .family = "shape",
       .doc = "Pads each dim with paddings[2k] before and paddings[2k+1] after, filled with value.",
       .inputs = {"x"},
       .attrs = {{"paddings", AttrKind::kInts, std::nullopt}, {"value", AttrKind::kFloat, 0.0}},
       .dtypes = kAllDTypeList,
       .infer = infer_pad});
}

}  // namespace tern::ops
