// Feature op family: the per-example lookups of a data transform (tern/transform, docs/transform.md)
// on i64 string fingerprints (tern/base/fingerprint.h) and numbers. None is differentiable: their
// outputs are integer indices.
//   vocab_lookup(x, keys, values)  x's fingerprints looked up in a sorted key table
//   bucketize(x)                   numbers -> bucket index by sorted boundaries (tf.raw_ops.Bucketize)
//   hash_bucket(x)                 mix64(x) mod num_buckets
//   fingerprint_combine(a, b, ...) one fingerprint per position for a feature cross
#include <string>
#include <vector>

#include "tern/ops/families.h"
#include "tern/ops/infer.h"
#include "tern/ops/registry.h"

namespace tern::ops {
namespace {

const std::vector<DType> kI64Only = {DType::kI64};

void require_i64(const InferContext& ctx, size_t i, const char* name) {
  if (ctx.input(i).dtype != DType::kI64)
    ctx.fail(name, " must be i64, got ", dtype_name(ctx.input(i).dtype));
}

std::vector<TensorType> infer_vocab_lookup(const InferContext& ctx) {
  require_i64(ctx, 0, "x");
  require_i64(ctx, 1, "keys");
  require_i64(ctx, 2, "values");
  if (ctx.input(1).shape.rank() != 1 || ctx.input(1).shape != ctx.input(2).shape)
    ctx.fail("keys and values must be one vector each of the same length, got ",
             ctx.input(1).shape, " and ", ctx.input(2).shape);
  if (ctx.attrs.get_int("num_oov_buckets") < 0)
    ctx.fail("num_oov_buckets must be >= 0, got ", ctx.attrs.get_int("num_oov_buckets"));
  return {{DType::kI64, ctx.input(0).shape}};
}

std::vector<TensorType> infer_bucketize(const InferContext& ctx) {
  const std::vector<double>& b = ctx.attrs.get_floats("boundaries");
  for (size_t i = 1; i < b.size(); ++i) {
    if (!(b[i - 1] <= b[i]))
      ctx.fail("boundaries must be sorted ascending, got ", b[i - 1], " before ", b[i]);
  }
  return {{DType::kI64, ctx.input(0).shape}};
}

std::vector<TensorType> infer_hash_bucket(const InferContext& ctx) {
  require_i64(ctx, 0, "x");
  if (ctx.attrs.get_int("num_buckets") < 1)
    ctx.fail("num_buckets must be >= 1, got ", ctx.attrs.get_int("num_buckets"));
  return {{DType::kI64, ctx.input(0).shape}};
}

std::vector<TensorType> infer_fingerprint_combine(const InferContext& ctx) {
  for (size_t i = 0; i < ctx.inputs.size(); ++i) {
    require_i64(ctx, i, "every input");
    if (ctx.input(i).shape != ctx.input(0).shape)
      ctx.fail("inputs must have one shape, got ", ctx.input(0).shape, " and ", ctx.input(i).shape);
  }
  return {{DType::kI64, ctx.input(0).shape}};
}

}  // namespace

void register_feature_ops(OpRegistry& r) {
  r.add({.name = "vocab_lookup",
         .family = "feature",
         .doc = "values[k] where keys[k] == x (keys sorted ascending, unique); a fingerprint not "
                "in keys gives len(keys) + (uint64(x) mod num_oov_buckets), or -1 with no OOV "
                "buckets.",
         .inputs = {"x", "keys", "values"},
         .attrs = {{"num_oov_buckets", AttrKind::kInt, int64_t{1}}},
         .dtypes = kI64Only,
         .traits = kTraitNotDifferentiable,
         .infer = infer_vocab_lookup});
  r.add({.name = "bucketize",
         .family = "feature",
         .doc = "The number of boundaries <= x (tf.raw_ops.Bucketize: bucket i holds "
                "boundaries[i-1] <= x < boundaries[i]); NaN gives len(boundaries).",
         .inputs = {"x"},
         .attrs = {{"boundaries", AttrKind::kFloats, std::nullopt}},
         .dtypes = {DType::kF32, DType::kF64},
         .traits = kTraitElementwise | kTraitNotDifferentiable,
         .infer = infer_bucketize});
  r.add({.name = "hash_bucket",
         .family = "feature",
         .doc = "mix64(uint64(x)) mod num_buckets (mix64: splitmix64's finalizer).",
         .inputs = {"x"},
         .attrs = {{"num_buckets", AttrKind::kInt, std::nullopt}},
         .dtypes = kI64Only,
         .traits = kTraitElementwise | kTraitNotDifferentiable,
         .infer = infer_hash_bucket});
  r.add({.name = "fingerprint_combine",
         .family = "feature",
         .doc = "Per position: h = 0xcbf29ce484222325, then h = mix64(h ^ uint64(x)) for each "
                "input in order (a feature cross's fingerprint; order matters).",
         .inputs = {"x"},
         .variadic = true,
         .min_inputs = 2,
         .dtypes = kI64Only,
         .traits = kTraitElementwise | kTraitNotDifferentiable,
         .infer = infer_fingerprint_combine});
}

}  // namespace tern::ops
