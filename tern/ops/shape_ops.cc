// shape op family, layout part: reshape, transpose, broadcast_to, expand_dims, squeeze, concat,
// stack, split. Every shape op moves data without arithmetic, so each claims all nine dtypes.
// The indexing part (slice, strided_slice, gather, scatter_add, one_hot, pad) is in
// shape_index_ops.cc.
#include <algorithm>

#include "tern/base/checked_math.h"
#include "tern/ops/families.h"
#include "tern/ops/infer.h"
#include "tern/ops/registry.h"

namespace tern::ops {

void register_shape_index_ops(OpRegistry& r);  // shape_index_ops.cc

namespace {

std::string ints_to_string(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

// Normalizes `axis` for rank `r` (valid range [-r, r)); fails naming the attribute.
int checked_axis(const InferContext& ctx, int64_t axis, int r, const char* what = "axis") {
  if (axis < -r || axis >= r) ctx.fail(what, " ", axis, " is out of range for rank ", r);
  return static_cast<int>(axis < 0 ? axis + r : axis);
}

std::vector<TensorType> infer_reshape(const InferContext& ctx) {
  const Shape& in = ctx.input(0).shape;
  std::vector<int64_t> dims = ctx.attrs.get_ints("shape");
  int unknown = -1;
  int64_t known = 1;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] == -1 && unknown < 0) {
      unknown = static_cast<int>(i);
    } else if (dims[i] < 0) {
      ctx.fail("cannot reshape ", in, " to ", ints_to_string(dims),
               ": dims must be >= 0 with at most one -1");
    } else {
      int64_t next;
      if (__builtin_mul_overflow(known, dims[i], &next)) {
        ctx.fail("cannot reshape ", in, " to ", ints_to_string(dims), ": element count overflows");
      }
      known = next;
    }
  }
  if (unknown >= 0) {
    if (known == 0 || in.num_elements() % known != 0) {
      ctx.fail("cannot reshape ", in, " (", in.num_elements(), " elements) to ",
               ints_to_string(dims), ": no size for -1 fits");
    }
    dims[static_cast<size_t>(unknown)] = in.num_elements() / known;
  } else if (known != in.num_elements()) {
    ctx.fail("cannot reshape ", in, " (", in.num_elements(), " elements) to ", ints_to_string(dims),
             " (", known, " elements)");
  }
  return {{ctx.input(0).dtype, Shape(dims)}};
}

std::vector<TensorType> infer_transpose(const InferContext& ctx) {
  const Shape& in = ctx.input(0).shape;
  std::vector<int64_t> perm = ctx.attrs.get_ints("perm");
  if (perm.empty()) {
    for (int i = in.rank() - 1; i >= 0; --i) perm.push_back(i);
  }
  if (static_cast<int>(perm.size()) != in.rank()) {
    ctx.fail("perm ", ints_to_string(perm), " has ", perm.size(), " entries for rank ", in.rank());
  }
  std::vector<bool> seen(perm.size(), false);
  std::vector<int64_t> out;
  for (int64_t p : perm) {
    if (p < 0 || p >= in.rank() || seen[static_cast<size_t>(p)]) {
      ctx.fail("perm ", ints_to_string(perm), " is not a permutation of 0..", in.rank() - 1);
    }
    seen[static_cast<size_t>(p)] = true;
    out.push_back(in.dim(static_cast<int>(p)));
  }
  return {{ctx.input(0).dtype, Shape(out)}};
}

std::vector<TensorType> infer_broadcast_to(const InferContext& ctx) {
  const Shape& in = ctx.input(0).shape;
  const std::vector<int64_t>& dims = ctx.attrs.get_ints("shape");
  for (int64_t d : dims) {
    if (d < 0) ctx.fail("target shape ", ints_to_string(dims), " has a negative dim");
  }
  Shape target(dims);
  bool ok = in.rank() <= target.rank();
  for (int i = 0; ok && i < in.rank(); ++i) {
    int64_t d = in.dim(i), t = target.dim(target.rank() - in.rank() + i);
    ok = d == t || d == 1;
  }
  if (!ok) ctx.fail("cannot broadcast ", in, " to ", target);
  return {{ctx.input(0).dtype, target}};
}

std::vector<TensorType> infer_expand_dims(const InferContext& ctx) {
  const Shape& in = ctx.input(0).shape;
  int axis = checked_axis(ctx, ctx.attrs.get_int("axis"), in.rank() + 1);
  std::vector<int64_t> dims = in.dims();
  dims.insert(dims.begin() + axis, 1);
  return {{ctx.input(0).dtype, Shape(dims)}};
}

std::vector<TensorType> infer_squeeze(const InferContext& ctx) {
  const Shape& in = ctx.input(0).shape;
  const std::vector<int64_t>& axes = ctx.attrs.get_ints("axes");
  std::vector<bool> drop(static_cast<size_t>(in.rank()), false);
  for (int i = 0; i < in.rank(); ++i) drop[static_cast<size_t>(i)] = axes.empty() && in.dim(i) == 1;
  for (int64_t a : axes) {
    int n = checked_axis(ctx, a, in.rank());
    if (in.dim(n) != 1) ctx.fail("cannot squeeze axis ", a, " of size ", in.dim(n));
    drop[static_cast<size_t>(n)] = true;
  }
  std::vector<int64_t> dims;
  for (int i = 0; i < in.rank(); ++i) {
    if (!drop[static_cast<size_t>(i)]) dims.push_back(in.dim(i));
  }
  return {{ctx.input(0).dtype, Shape(dims)}};
}

std::vector<TensorType> infer_concat(const InferContext& ctx) {
  const Shape& first = ctx.input(0).shape;
  if (first.rank() == 0) ctx.fail("cannot concatenate scalars (use stack)");
  int axis = checked_axis(ctx, ctx.attrs.get_int("axis"), first.rank());
  std::vector<int64_t> dims = first.dims();
  for (size_t i = 1; i < ctx.inputs.size(); ++i) {
    require_same_dtype(ctx, 0, i);
    const Shape& s = ctx.input(i).shape;
    bool ok = s.rank() == first.rank();
    for (int k = 0; ok && k < s.rank(); ++k) ok = k == axis || s.dim(k) == first.dim(k);
    if (!ok) ctx.fail("input ", i, " shape ", s, " does not match ", first, " outside axis ", axis);
    dims[static_cast<size_t>(axis)] = checked_add(dims[static_cast<size_t>(axis)], s.dim(axis));
  }
  return {{ctx.input(0).dtype, Shape(dims)}};
}

std::vector<TensorType> infer_stack(const InferContext& ctx) {
  const Shape& first = ctx.input(0).shape;
  for (size_t i = 1; i < ctx.inputs.size(); ++i) require_same_type(ctx, 0, i);
  int axis = checked_axis(ctx, ctx.attrs.get_int("axis"), first.rank() + 1);
  std::vector<int64_t> dims = first.dims();
  dims.insert(dims.begin() + axis, static_cast<int64_t>(ctx.inputs.size()));
  return {{ctx.input(0).dtype, Shape(dims)}};
}

std::vector<TensorType> infer_split(const InferContext& ctx) {
  const Shape& in = ctx.input(0).shape;
  if (in.rank() == 0) ctx.fail("cannot split a scalar");
  int axis = checked_axis(ctx, ctx.attrs.get_int("axis"), in.rank());
  std::vector<int64_t> sizes = ctx.attrs.get_ints("sizes");
  if (sizes.empty()) ctx.fail("sizes must not be empty");
  int unknown = -1;
  int64_t total = 0;
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] == -1 && unknown < 0) {
      unknown = static_cast<int>(i);
    } else if (sizes[i] < 0) {
      ctx.fail("sizes ", ints_to_string(sizes), " must be >= 0 with at most one -1");
    } else {
      total = checked_add(total, sizes[i]);
    }
  }
  if (unknown >= 0 && total <= in.dim(axis)) {
    sizes[static_cast<size_t>(unknown)] = in.dim(axis) - total;
    total = in.dim(axis);
  }
  if (total != in.dim(axis)) {
    ctx.fail("sizes ", ints_to_string(ctx.attrs.get_ints("sizes")), " do not add up to dim ",
             in.dim(axis), " of axis ", axis);
  }
  std::vector<TensorType> out;
  for (int64_t s : sizes) {
    std::vector<int64_t> dims = in.dims();
    dims[static_cast<size_t>(axis)] = s;
    out.push_back({ctx.input(0).dtype, Shape(dims)});
  }
  return out;
}

}  // namespace

void register_shape_ops(OpRegistry& r) {
  r.add({.name = "reshape",
         .family = "shape",
         .doc = "Same elements in a new shape; one dim may be -1 (inferred).",
         .inputs = {"x"},
         .attrs = {{"shape", AttrKind::kInts, std::nullopt}},
         .dtypes = kAllDTypeList,
         .traits = kTraitView,
         .inplace = {{0, 0}},
         .infer = infer_reshape});
  r.add({.name = "transpose",
         .family = "shape",
         .doc = "Permutes dims: output dim i is input dim perm[i] ([] = reverse).",
         .inputs = {"x"},
         .attrs = {{"perm", AttrKind::kInts, std::vector<int64_t>{}}},
         .dtypes = kAllDTypeList,
         .infer = infer_transpose});
  r.add({.name = "broadcast_to",
         .family = "shape",
         .doc = "Broadcasts x to `shape` (NumPy rules).",
         .inputs = {"x"},
         .attrs = {{"shape", AttrKind::kInts, std::nullopt}},
         .dtypes = kAllDTypeList,
         .infer = infer_broadcast_to});
  r.add({.name = "expand_dims",
         .family = "shape",
         .doc = "Inserts a dim of size 1 at `axis` (in [-rank-1, rank]).",
         .inputs = {"x"},
         .attrs = {{"axis", AttrKind::kInt, std::nullopt}},
         .dtypes = kAllDTypeList,
         .traits = kTraitView,
         .inplace = {{0, 0}},
         .infer = infer_expand_dims});
  r.add({.name = "squeeze",
         .family = "shape",
         .doc = "Removes the size-1 dims in `axes` ([] = every size-1 dim).",
         .inputs = {"x"},
         .attrs = {{"axes", AttrKind::kInts, std::vector<int64_t>{}}},
         .dtypes = kAllDTypeList,
         .traits = kTraitView,
         .inplace = {{0, 0}},
         .infer = infer_squeeze});
  r.add({.name = "concat",
         .family = "shape",
         .doc = "Joins inputs along an existing axis.",
         .inputs = {"x"},
         .variadic = true,
         .min_inputs = 1,
         .attrs = {{"axis", AttrKind::kInt, int64_t{0}}},
         .dtypes = kAllDTypeList,
         .infer = infer_concat});
  r.add({.name = "stack",
         .family = "shape",
         .doc = "Joins same-shaped inputs along a new axis.",
         .inputs = {"x"},
         .variadic = true,
         .min_inputs = 1,
         .attrs = {{"axis", AttrKind::kInt, int64_t{0}}},
         .dtypes = kAllDTypeList,
         .infer = infer_stack});
  r.add({.name = "split",
         .family = "shape",
         .doc = "Splits x along axis into len(sizes) outputs; one size may be -1.",
         .inputs = {"x"},
         .attrs = {{"axis", AttrKind::kInt, int64_t{0}}, {"sizes", AttrKind::kInts, std::nullopt}},
         .dtypes = kAllDTypeList,
         .infer = infer_split});
  register_shape_index_ops(r);
}

}  // namespace tern::ops
