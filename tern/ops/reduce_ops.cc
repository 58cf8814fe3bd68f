// reduce op family: sum, mean, max, min, prod, variance over `axes` (ints, [] = all) with
// `keepdims`; argmax / argmin along one `axis` returning i64 indices (first index on ties).
// variance is the population (biased) variance, like tf.math.reduce_variance. sum and mean take
// out_dtype = "f32" to return f32 from a bf16 or f16 x (accumulated in f32 either way): what a
// cast up followed by the reduction gives, without the cast's pass (amp reads a 16-bit gradient
// that way into an f32 bias gradient).
#include <string>

#include "tern/ops/families.h"
#include "tern/ops/infer.h"
#include "tern/ops/registry.h"

namespace tern::ops {
namespace {

// The output shape of reducing `in` over normalized `axes`.
Shape reduced_shape(const Shape& in, const std::vector<int>& axes, bool keepdims) {
  std::vector<int64_t> out;
  size_t k = 0;
  for (int i = 0; i < in.rank(); ++i) {
    bool reduced = k < axes.size() && axes[k] == i;
    if (reduced) ++k;
    if (!reduced) {
      out.push_back(in.dim(i));
    } else if (keepdims) {
      out.push_back(1);
    }
  }
  return Shape(std::move(out));
}

// sum/mean/prod/variance: an empty reduction is fine (0, NaN, 1, NaN); max/min need an element.
InferFn infer_reduce(bool needs_elements) {
  return [needs_elements](const InferContext& ctx) -> std::vector<TensorType> {
    const Shape& in = ctx.input(0).shape;
    DType out = ctx.input(0).dtype;
    if (const AttrValue* o = ctx.attrs.find("out_dtype")) {
      const std::string& want = std::get<std::string>(*o);
      if (want == "f32") {
        if (out != DType::kBF16 && out != DType::kF16 && out != DType::kF32) {
          ctx.fail("out_dtype \"f32\" needs an f32, bf16 or f16 x, got ", dtype_name(out));
        }
        out = DType::kF32;
      } else if (!want.empty()) {
        ctx.fail("out_dtype must be \"\" (x's dtype) or \"f32\", got \"", want, "\"");
      }
    }
    std::vector<int> axes = reduction_axes(ctx, ctx.attrs.get_ints("axes"), in.rank());
    if (needs_elements) {
      for (int a : axes) {
        if (in.dim(a) == 0) ctx.fail("cannot reduce over axis ", a, " of size 0");
      }
    }
    return {{out, reduced_shape(in, axes, ctx.attrs.get_bool("keepdims"))}};
  };
}

std::vector<TensorType> infer_arg_reduce(const InferContext& ctx) {
  const Shape& in = ctx.input(0).shape;
  if (in.rank() == 0) ctx.fail("needs an input of rank >= 1");
  int64_t axis = ctx.attrs.get_int("axis");
  if (axis < -in.rank() || axis >= in.rank()) {
    ctx.fail("axis ", axis, " is out of range for rank ", in.rank());
  }
  int a = static_cast<int>(axis < 0 ? axis + in.rank() : axis);
  if (in.dim(a) == 0) ctx.fail("cannot reduce over axis ", a, " of size 0");
  return {{DType::kI64, reduced_shape(in, {a}, ctx.attrs.get_bool("keepdims"))}};
}

void add_reduce(OpRegistry& r, const std::string& name, std::string doc, std::vector<DType> dtypes,
                bool needs_elements, bool with_out_dtype = false) {
  std::vector<AttrSpec> attrs = {{"axes", AttrKind::kInts, std::vector<int64_t>{}},
                                 {"keepdims", AttrKind::kBool, false}};
  if (with_out_dtype) attrs.push_back({"out_dtype", AttrKind::kString, std::string()});
  r.add({.name = name,
         .family = "reduce",
         .doc = std::move(doc),
         .inputs = {"x"},
         .attrs = std::move(attrs),
         .dtypes = std::move(dtypes),
         .infer = infer_reduce(needs_elements)});
}

void add_arg_reduce(OpRegistry& r, const std::string& name, std::string doc) {
  r.add({.name = name,
         .family = "reduce",
         .doc = std::move(doc),
         .inputs = {"x"},
         .attrs = {{"axis", AttrKind::kInt, int64_t{-1}}, {"keepdims", AttrKind::kBool, false}},
         .dtypes = kNumericDTypes,
         .traits = kTraitNotDifferentiable,
         .infer = infer_arg_reduce});
}

}  // namespace

void register_reduce_ops(OpRegistry& r) {
  add_reduce(r, "sum", "Sum over axes ([] = all); out_dtype \"f32\" for f32 from 16-bit x.",
             kNumericDTypes, false, true);
  add_reduce(r, "mean",
             "Arithmetic mean over axes ([] = all); out_dtype \"f32\" for f32 from 16-bit x.",
             kFloatDTypes, false, true);
  add_reduce(r, "max", "Maximum over axes ([] = all); gradient split evenly among ties.",
             kNumericDTypes, true);
  add_reduce(r, "min", "Minimum over axes ([] = all); gradient split evenly among ties.",
             kNumericDTypes, true);
  add_reduce(r, "prod", "Product over axes ([] = all).", kNumericDTypes, false);
  add_reduce(r, "variance", "Population variance over axes ([] = all).", kFloatDTypes, false);
  add_arg_reduce(r, "argmax", "Index (i64) of the largest element along axis; first on ties.");
  add_arg_reduce(r, "argmin", "Index (i64) of the smallest element along axis; first on ties.");
}

}  // namespace tern::ops
