// Source ops: graph inputs fed per run, variables read from the variable store, and constants.
// No kernel runs for them; the runtime binds their buffers.
#include "tern/ops/families.h"
#include "tern/ops/infer.h"
#include "tern/ops/registry.h"

namespace tern::ops {
namespace {

std::vector<TensorType> infer_declared(const InferContext& ctx) {
  const auto& dims = ctx.attrs.get_ints("shape");
  for (int64_t d : dims) {
    if (d < 0) ctx.fail("declared shape has a negative dimension");
  }
  return {{ctx.attrs.get_dtype("dtype"), Shape(dims)}};
}

}  // namespace

void register_source_ops(OpRegistry& r) {
  const uint32_t kSourceTraits = kTraitSource | kTraitStateful;
  r.add({.name = "input",
         .family = "source",
         .doc = "A value fed by the caller on every run, by name.",
         .attrs = {{"name", AttrKind::kString, std::nullopt},
                   {"dtype", AttrKind::kDType, std::nullopt},
                   {"shape", AttrKind::kInts, std::nullopt}},
         .dtypes = kAllDTypeList,
         .key_input = -1,
         .traits = kSourceTraits | kTraitNotDifferentiable,
         .infer = infer_declared});
  r.add({.name = "variable",
         .family = "source",
         .doc = "A persistent tensor in the variable store, read by name.",
         .attrs = {{"name", AttrKind::kString, std::nullopt},
                   {"dtype", AttrKind::kDType, std::nullopt},
                   {"shape", AttrKind::kInts, std::nullopt}},
         .dtypes = kAllDTypeList,
         .key_input = -1,
         .traits = kSourceTraits,
         .infer = infer_declared});
  r.add({.name = "variable_copy",
         .family = "source",
         .doc = "The variable store's 16-bit copy (dtype bf16 or f16) of the f32 variable `name`, "
                "read by mixed-precision steps instead of a cast of the variable; the store casts "
                "it again when the variable changed, an optimizer update may write it "
                "(attribute copies). dtype f32: the variable's values rounded to bf16, held in "
                "f32 (the bf16 copy widened, for matmuls that run bf16 operands in f32).",
         .attrs = {{"name", AttrKind::kString, std::nullopt},
                   {"dtype", AttrKind::kDType, std::nullopt},
                   {"shape", AttrKind::kInts, std::nullopt}},
         .dtypes = {DType::kBF16, DType::kF16, DType::kF32},
         .key_input = -1,
         .traits = kSourceTraits | kTraitNotDifferentiable,
         .infer = infer_declared});
  r.add({.name = "constant",
         .family = "source",
         .doc = "A tensor baked into the graph.",
         .attrs = {{"value", AttrKind::kTensor, std::nullopt}},
         .dtypes = kAllDTypeList,
         .key_input = -1,
         .traits = kTraitSource | kTraitNotDifferentiable,
         .infer = [](const InferContext& ctx) -> std::vector<TensorType> {
           return {ctx.attrs.get_tensor("value").type()};
         }});
}

}  // namespace tern::ops
