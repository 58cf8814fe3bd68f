// matmul: C = op(A) @ op(B) with op = optional transpose of the last two dims; leading (batch)
// dims broadcast NumPy-style. A: [..., M, K] (or [..., K, M] with transpose_a), B: [..., K, N]
// (or [..., N, K] with transpose_b), C: [..., M, N]. C has the inputs' dtype, or f32 from 16-bit
// inputs with out_dtype = "f32" (mixed precision: accumulated and stored in f32, as a weight
// gradient the f32 optimizer reads).
#include "tern/ops/families.h"
#include "tern/ops/infer.h"
#include "tern/ops/registry.h"

namespace tern::ops {
namespace {

std::vector<TensorType> infer_matmul(const InferContext& ctx) {
  require_same_dtype(ctx, 0, 1);
  const Shape& a = ctx.input(0).shape;
  const Shape& b = ctx.input(1).shape;
  if (a.rank() < 2 || b.rank() < 2) ctx.fail("both inputs need rank >= 2");
  bool ta = ctx.attrs.get_bool("transpose_a"), tb = ctx.attrs.get_bool("transpose_b");
  int64_t m = ta ? a[a.rank() - 1] : a[a.rank() - 2];
  int64_t ka = ta ? a[a.rank() - 2] : a[a.rank() - 1];
  int64_t kb = tb ? b[b.rank() - 1] : b[b.rank() - 2];
  int64_t n = tb ? b[b.rank() - 2] : b[b.rank() - 1];
  if (ka != kb) ctx.fail("contraction dims differ (", ka, " vs ", kb, ")");
  std::vector<int64_t> batch_a(a.dims().begin(), a.dims().end() - 2);
  std::vector<int64_t> batch_b(b.dims().begin(), b.dims().end() - 2);
  Shape batch;
  try {
    batch = broadcast_shapes(Shape(batch_a), Shape(batch_b));
  } catch (const Error&) {
    ctx.fail("batch dims cannot be broadcast");
  }
  std::vector<int64_t> out = batch.dims();
  out.push_back(m);
  out.push_back(n);
  DType dtype = ctx.input(0).dtype;
  if (const AttrValue* o = ctx.attrs.find("out_dtype")) {
    const std::string& want = std::get<std::string>(*o);
    if (want == "f32") {
      if (dtype != DType::kBF16 && dtype != DType::kF16 && dtype != DType::kF32) {
        ctx.fail("out_dtype \"f32\" needs bf16, f16 or f32 inputs, got ", dtype_name(dtype));
      }
      dtype = DType::kF32;
    } else if (!want.empty()) {
      ctx.fail("out_dtype must be \"\" or \"f32\", got \"", want, "\"");
    }
  }
  return {{dtype, Shape(out)}};
}

}  // namespace

void register_matmul_ops(OpRegistry& r) {
  r.add({.name = "matmul",
         .family = "matmul",
         .doc = "Batched matrix product with optional transposes; batch dims broadcast.",
         .inputs = {"a", "b"},
         .attrs = {{"transpose_a", AttrKind::kBool, false},
                   {"transpose_b", AttrKind::kBool, false},
                   {"out_dtype", AttrKind::kString, std::string()}},
         .dtypes = kFloatDTypes,
         .infer = infer_matmul});
}

}  // namespace tern::ops
