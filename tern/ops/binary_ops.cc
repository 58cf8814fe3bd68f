// Binary op family with NumPy broadcasting: arithmetic (add sub mul div pow maximum minimum),
// comparisons (bool output), logical_and/or/not on bool, and where(cond, a, b).
// Inputs of arithmetic and comparison ops share one dtype; the output shape is their broadcast.
#include <string>
#include <vector>

#include "tern/ops/families.h"
#include "tern/ops/infer.h"
#include "tern/ops/registry.h"

namespace tern::ops {
namespace {

const std::vector<DType> kBoolDTypes = {DType::kBool};

struct BinarySpec {
  const char* name;
  const char* doc;
  const std::vector<DType>* dtypes;
  uint32_t extra_traits = kTraitNone;
};

void add_arithmetic(OpRegistry& r, const BinarySpec& s) {
  r.add(
      {.name = s.name,
       .family = "binary",
       .doc = s.doc,
       .inputs = {"a", "b"},
       .dtypes = *s.dtypes,
       .traits = kTraitElementwise | s.extra_traits,
       // Legal only when the input has the output's shape (not broadcast); the planner checks.
       .inplace = {{0, 0}, {0, 1}},
       .infer = [](const InferContext& ctx) { return infer_broadcast(ctx, ctx.input(0).dtype); }});
}

void add_predicate(OpRegistry& r, const BinarySpec& s) {
  r.add({.name = s.name,
         .family = "binary",
         .doc = s.doc,
         .inputs = {"a", "b"},
         .dtypes = *s.dtypes,
         .traits = kTraitElementwise | kTraitNotDifferentiable | s.extra_traits,
         .infer = [](const InferContext& ctx) { return infer_broadcast(ctx, DType::kBool); }});
}

std::vector<TensorType> infer_where(const InferContext& ctx) {
  if (ctx.input(0).dtype != DType::kBool) {
    ctx.fail("cond must be bool, got ", dtype_name(ctx.input(0).dtype));
  }
  require_same_dtype(ctx, 1, 2);
  Shape s = ctx.input(0).shape;
  for (size_t i = 1; i < 3; ++i) {
    try {
      s = broadcast_shapes(s, ctx.input(i).shape);
    } catch (const Error&) {
      ctx.fail("shapes ", ctx.input(0).shape, ", ", ctx.input(1).shape, " and ", ctx.input(2).shape,
               " cannot be broadcast");
    }
  }
  return {{ctx.input(1).dtype, s}};
}

}  // namespace

void register_binary_ops(OpRegistry& r) {
  const BinarySpec arithmetic[] = {
      {"add", "a + b (integers wrap around).", &kNumericDTypes, kTraitCommutative},
      {"sub", "a - b (integers wrap around).", &kNumericDTypes},
      {"mul", "a * b (integers wrap around).", &kNumericDTypes, kTraitCommutative},
      {"div", "a / b (IEEE: x/0 is +-inf or NaN).", &kFloatDTypes},
      {"pow", "a ^ b (IEEE pow: negative bases need integral exponents).", &kFloatDTypes},
      {"maximum", "The larger of a and b; NaN if either is NaN.", &kNumericDTypes,
       kTraitCommutative},
      {"minimum", "The smaller of a and b; NaN if either is NaN.", &kNumericDTypes,
       kTraitCommutative},
  };
  for (const BinarySpec& s : arithmetic) add_arithmetic(r, s);

  const BinarySpec predicates[] = {
      {"equal", "a == b.", &kAllDTypeList, kTraitCommutative},
      {"not_equal", "a != b.", &kAllDTypeList, kTraitCommutative},
      {"less", "a < b.", &kAllDTypeList},
      {"less_equal", "a <= b.", &kAllDTypeList},
      {"greater", "a > b.", &kAllDTypeList},
      {"greater_equal", "a >= b.", &kAllDTypeList},
      {"logical_and", "a && b.", &kBoolDTypes, kTraitCommutative},
      {"logical_or", "a || b.", &kBoolDTypes, kTraitCommutative},
  };
  for (const BinarySpec& s : predicates) add_predicate(r, s);

  r.add({.name = "logical_not",
         .family = "binary",
         .doc = "!x on bool.",
         .inputs = {"x"},
         .dtypes = kBoolDTypes,
         .traits = kTraitElementwise | kTraitNotDifferentiable,
         .inplace = {{0, 0}},
         .infer = [](const InferContext& ctx) { return infer_same_as_input(ctx, 0); }});

  r.add({.name = "where",
         .family = "binary",
         .doc = "a where cond else b; cond, a and b broadcast together. Differentiable in a, b.",
         .inputs = {"cond", "a", "b"},
         .dtypes = kAllDTypeList,
         .key_input = 1,
         .traits = kTraitElementwise,
         .inplace = {{0, 1}, {0, 2}},
         .infer = infer_where});
}

}  // namespace tern::ops
