// Reference kernels for the feature family (tern/ops/feature_ops.cc): vocab_lookup (binary
// search in the sorted keys), bucketize (std::upper_bound, as tf.raw_ops.Bucketize), hash_bucket
// and fingerprint_combine (mix64, tern/base/fingerprint.h).
#include <algorithm>
#include <cmath>

#include "tern/base/error.h"
#include "tern/base/fingerprint.h"
#include "tern/kernels/ref/ref.h"

namespace tern::kernels::ref {
namespace {

void vocab_lookup_ref(KernelContext& ctx) {
  const Tensor& x = ctx.inputs[0];
  const Tensor& keys = ctx.inputs[1];
  const Tensor& values = ctx.inputs[2];
  Tensor& y = ctx.outputs[0];
  const int64_t n = keys.num_elements();
  const int64_t* k = keys.data<int64_t>();
  for (int64_t i = 1; i < n; ++i) {
    TERN_CHECK_ARG(k[i - 1] < k[i], "vocab_lookup: keys must be sorted ascending and unique, got ",
                   k[i - 1], " before ", k[i], " at ", i);
  }
  const uint64_t oov = static_cast<uint64_t>(ctx.attrs.get_int("num_oov_buckets"));
  const int64_t* in = x.data<int64_t>();
  int64_t* out = y.data<int64_t>();
  for (int64_t i = 0; i < x.num_elements(); ++i) {
    const int64_t* pos = std::lower_bound(k, k + n, in[i]);
    if (pos != k + n && *pos == in[i]) {
      out[i] = values.data<int64_t>()[pos - k];
    } else if (oov > 0) {
      out[i] = n + static_cast<int64_t>(static_cast<uint64_t>(in[i]) % oov);
    } else {
      out[i] = -1;
    }
  }
}

template <typename T>
void bucketize_typed(KernelContext& ctx) {
  const std::vector<double>& b = ctx.attrs.get_floats("boundaries");
  const T* in = ctx.inputs[0].data<T>();
  int64_t* out = ctx.outputs[0].data<int64_t>();
  for (int64_t i = 0; i < ctx.inputs[0].num_elements(); ++i) {
    // NaN compares false with every boundary: upper_bound gives the end (the last bucket).
    const double v = static_cast<double>(in[i]);
    out[i] = std::upper_bound(b.begin(), b.end(), v) - b.begin();
  }
}

void bucketize_ref(KernelContext& ctx) {
  if (ctx.inputs[0].dtype() == DType::kF64) {
    bucketize_typed<double>(ctx);
  } else {
    bucketize_typed<float>(ctx);
  }
}

void hash_bucket_ref(KernelContext& ctx) {
  const uint64_t n = static_cast<uint64_t>(ctx.attrs.get_int("num_buckets"));
  const int64_t* in = ctx.inputs[0].data<int64_t>();
  int64_t* out = ctx.outputs[0].data<int64_t>();
  for (int64_t i = 0; i < ctx.inputs[0].num_elements(); ++i)
    out[i] = static_cast<int64_t>(mix64(static_cast<uint64_t>(in[i])) % n);
}

void fingerprint_combine_ref(KernelContext& ctx) {
  int64_t* out = ctx.outputs[0].data<int64_t>();
  for (int64_t i = 0; i < ctx.outputs[0].num_elements(); ++i) {
    uint64_t h = kFnv64OffsetBasis;
    for (const Tensor& x : ctx.inputs) h = mix64(h ^ static_cast<uint64_t>(x.data<int64_t>()[i]));
    out[i] = static_cast<int64_t>(h);
  }
}

}  // namespace

void register_feature_ref(KernelRegistry& r) {
  add_ref(r, "vocab_lookup", {DType::kI64}, vocab_lookup_ref);
  add_ref(r, "bucketize", {DType::kF32, DType::kF64}, bucketize_ref);
  add_ref(r, "hash_bucket", {DType::kI64}, hash_bucket_ref);
  add_ref(r, "fingerprint_combine", {DType::kI64}, fingerprint_combine_ref);
}

}  // namespace tern::kernels::ref
