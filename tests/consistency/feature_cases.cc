// Consistency cases: feature family (data transforms). Integer outputs, no gradients (the ops are
// declared kTraitNotDifferentiable, so check_grad is false).
#include <algorithm>

#include "tern/base/fingerprint.h"
#include "tests/consistency/op_case.h"

namespace tern::testing {

namespace {
using I64s = std::vector<int64_t>;

Tensor i64_vector(const I64s& v) {
  return Tensor::from_vector(Shape{static_cast<int64_t>(v.size())}, v);
}
}  // namespace

TERN_OP_CASES(feature) {
  const int64_t a = fingerprint64_i64("audi"), b = fingerprint64_i64("bmw"),
                c = fingerprint64_i64("volvo"), d = fingerprint64_i64("saab");
  I64s keys = {a, b, c};
  std::sort(keys.begin(), keys.end());
  return {
      {"vocab_lookup",
       {Fixed(Tensor::from_vector(Shape{2, 3}, I64s{a, d, c, b, b, -7})), Fixed(i64_vector(keys)),
        Fixed(i64_vector({2, 0, 1}))},
       {{"num_oov_buckets", int64_t{3}}},
       false,
       {},
       1e-5,
       "oov-buckets"},
      {"vocab_lookup",
       {Fixed(i64_vector({a, d})), Fixed(i64_vector(keys)), Fixed(i64_vector({0, 1, 2}))},
       {{"num_oov_buckets", int64_t{0}}},
       false,
       {},
       1e-5,
       "no-oov"},
      {"bucketize",
       {In({3, 4}, -2, 2)},
       {{"boundaries", std::vector<double>{-1, 0, 0, 1.5}}},
       false,
       {},
       1e-5,
       "ties"},
      {"bucketize",
       {WithNaN({5}, {1, 4}, -2, 2)},
       {{"boundaries", std::vector<double>{0}}},
       false,
       {},
       1e-5,
       "nan-last"},
      {"hash_bucket", {Idx({7}, -1000, 1000)}, {{"num_buckets", int64_t{5}}}, false},
      {"fingerprint_combine", {Idx({2, 3}, -50, 50), Idx({2, 3}, 0, 9)}, {}, false, {}, 1e-5,
       "two"},
      {"fingerprint_combine",
       {Idx({4}, -50, 50), Idx({4}, 0, 9), Idx({4}, 0, 3)},
       {},
       false,
       {},
       1e-5,
       "three"},
  };
}

}  // namespace tern::testing
