// Tests of the feature-family reference kernels on hand-computed values: vocab_lookup (hits, OOV
// buckets, -1 without buckets, unsorted keys refused), bucketize (tf.raw_ops.Bucketize's edges,
// NaN in the last bucket), hash_bucket and fingerprint_combine against their formulas.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "tern/base/fingerprint.h"
#include "tern/kernels/ref/ref.h"
#include "tern/ops/registry.h"

namespace tern::kernels::ref {
namespace {

using I64s = std::vector<int64_t>;

Tensor run_ref(std::string_view op, const std::vector<Tensor>& inputs, ops::Attrs attrs = {}) {
  static KernelRegistry* registry = [] {
    auto* r = new KernelRegistry;
    register_feature_ref(*r);
    return r;
  }();
  const ops::OpDef& def = ops::OpRegistry::global().get(op);
  std::vector<TensorType> in_types;
  for (const Tensor& t : inputs) in_types.push_back(t.type());
  std::vector<TensorType> out_types = def.check_and_infer(op, in_types, attrs);
  KernelSignature sig{&def, &attrs, in_types, out_types};
  KernelSelection sel = registry->select(sig);
  std::vector<Tensor> outs;
  for (const TensorType& t : out_types) outs.emplace_back(t.dtype, t.shape);
  KernelContext ctx{inputs, outs, attrs, host_stream()};
  sel.kernel->run(ctx);
  return outs[0];
}

Tensor i64s(const I64s& v) { return Tensor::from_vector(Shape{static_cast<int64_t>(v.size())}, v); }

I64s to_i64s(const Tensor& t) {
  return I64s(t.data<int64_t>(), t.data<int64_t>() + t.num_elements());
}

TEST(FeatureRef, VocabLookup) {
  // Keys sorted, values = rank in the vocabulary (not the key order).
  Tensor keys = i64s({-5, 3, 40}), values = i64s({2, 0, 1});
  Tensor x = i64s({3, 40, -5, 7, -8});
  // 7 mod 2 = 1; uint64(-8) mod 2 = 0.
  EXPECT_EQ(to_i64s(run_ref("vocab_lookup", {x, keys, values}, {{"num_oov_buckets", int64_t{2}}})),
            (I64s{0, 1, 2, 3 + 1, 3 + 0}));
  EXPECT_EQ(to_i64s(run_ref("vocab_lookup", {x, keys, values}, {{"num_oov_buckets", int64_t{0}}})),
            (I64s{0, 1, 2, -1, -1}));
  // The default is one OOV bucket.
  EXPECT_EQ(to_i64s(run_ref("vocab_lookup", {x, keys, values})), (I64s{0, 1, 2, 3, 3}));
  // An empty vocabulary: everything is OOV.
  EXPECT_EQ(to_i64s(run_ref("vocab_lookup", {x, i64s({}), i64s({})})), (I64s{0, 0, 0, 0, 0}));
  EXPECT_THROW(run_ref("vocab_lookup", {x, i64s({3, -5}), i64s({0, 1})}), Error);
  EXPECT_THROW(run_ref("vocab_lookup", {x, i64s({3, 3}), i64s({0, 1})}), Error);
}

TEST(FeatureRef, BucketizeEdges) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  Tensor x = Tensor::from_values(DType::kF32, Shape{8}, {-10, 0, 0.5, 1, 2.9, 3, 100, nan});
  // Buckets: (-inf, 0) -> 0, [0, 1) -> 1, [1, 3) -> 2, [3, inf) -> 3; NaN -> 3.
  EXPECT_EQ(to_i64s(run_ref("bucketize", {x}, {{"boundaries", std::vector<double>{0, 1, 3}}})),
            (I64s{0, 1, 1, 2, 2, 3, 3, 3}));
  // No boundaries: one bucket.
  EXPECT_EQ(to_i64s(run_ref("bucketize", {x}, {{"boundaries", std::vector<double>{}}})),
            (I64s(8, 0)));
  // Repeated boundaries make an empty bucket; x equal to them goes past both.
  EXPECT_EQ(to_i64s(run_ref("bucketize", {Tensor::from_values(DType::kF64, Shape{2}, {1, 0.5})},
                            {{"boundaries", std::vector<double>{1, 1}}})),
            (I64s{2, 0}));
  EXPECT_THROW(run_ref("bucketize", {x}, {{"boundaries", std::vector<double>{2, 1}}}), Error);
}

TEST(FeatureRef, HashBucketAndCombine) {
  Tensor x = i64s({0, 1, -1});
  I64s want;
  for (int64_t v : {int64_t{0}, int64_t{1}, int64_t{-1}})
    want.push_back(static_cast<int64_t>(mix64(static_cast<uint64_t>(v)) % 7));
  EXPECT_EQ(to_i64s(run_ref("hash_bucket", {x}, {{"num_buckets", int64_t{7}}})), want);
  EXPECT_THROW(run_ref("hash_bucket", {x}, {{"num_buckets", int64_t{0}}}), Error);

  Tensor a = i64s({5, 6}), b = i64s({7, 8});
  uint64_t h0 = mix64(mix64(kFnv64OffsetBasis ^ 5) ^ 7);
  I64s ab = to_i64s(run_ref("fingerprint_combine", {a, b}));
  EXPECT_EQ(ab[0], static_cast<int64_t>(h0));
  // Order matters: a x b is not b x a.
  EXPECT_NE(to_i64s(run_ref("fingerprint_combine", {b, a}))[0], ab[0]);
  EXPECT_THROW(run_ref("fingerprint_combine", {a, i64s({1, 2, 3})}), Error);
}

}  // namespace
}  // namespace tern::kernels::ref
