// Reference kernels for dropout (the mask drawn from Philox per element, also packed into its
// second output), dropout_apply (the packed mask read) and embedding (row gather with range
// checks).
#include <algorithm>
#include <cmath>

#include "tern/base/philox.h"
#include "tern/kernels/index_check.h"
#include "tern/kernels/ref/ref.h"
#include "tern/ops/infer.h"

namespace tern::kernels::ref {
namespace {

// Element i is kept iff word i % 4 of Philox(seed)(i / 4, offset) >= rate * 2^32, so it is kept
// with probability 1 - rate. Kept elements are scaled by 1 / (1 - rate) in the compute type. With
// a residual input, the result stored is then added to it in the compute type (the two ops apart).
template <typename T>
void dropout_ref(KernelContext& ctx) {
  using C = compute_t<T>;
  const Tensor& xt = ctx.inputs[0];
  const T* x = xt.data<T>();
  T* y = ctx.outputs[0].data<T>();
  const T* residual = ctx.inputs.size() > 2 ? ctx.inputs[2].data<T>() : nullptr;
  const double rate = ctx.attrs.get_float("rate");
  const uint64_t offset = static_cast<uint64_t>(ctx.inputs[1].data<int64_t>()[0]);
  const Philox rng(static_cast<uint64_t>(ctx.attrs.get_int("seed")));
  const uint32_t threshold = static_cast<uint32_t>(std::floor(rate * 4294967296.0));
  const C scale = static_cast<C>(1.0 / (1.0 - rate));
  // The mask output: bit i % 32 of word i / 32 = element i kept.
  int32_t* mask = ctx.outputs[1].data<int32_t>();
  std::fill(mask, mask + ctx.outputs[1].num_elements(), 0);
  for (int64_t i = 0; i < xt.num_elements(); ++i) {
    uint32_t word = rng(static_cast<uint64_t>(i) / 4, offset)[static_cast<size_t>(i % 4)];
    bool keep = word >= threshold;
    y[i] = keep ? static_cast<T>(static_cast<C>(x[i]) * scale) : static_cast<T>(C(0));
    if (residual) y[i] = static_cast<T>(static_cast<C>(y[i]) + static_cast<C>(residual[i]));
    if (keep)
      mask[i / 32] = static_cast<int32_t>(static_cast<uint32_t>(mask[i / 32]) | (1u << (i % 32)));
  }
}

// x scaled as dropout scales it where the packed mask's bit is set, else +0.
template <typename T>
void dropout_apply_ref(KernelContext& ctx) {
  using C = compute_t<T>;
  const Tensor& xt = ctx.inputs[0];
  const T* x = xt.data<T>();
  const int32_t* mask = ctx.inputs[1].data<int32_t>();
  T* y = ctx.outputs[0].data<T>();
  const C scale = static_cast<C>(1.0 / (1.0 - ctx.attrs.get_float("rate")));
  for (int64_t i = 0; i < xt.num_elements(); ++i) {
    bool keep = (static_cast<uint32_t>(mask[i / 32]) >> (i % 32)) & 1u;
    y[i] = keep ? static_cast<T>(static_cast<C>(x[i]) * scale) : static_cast<T>(C(0));
  }
}

template <typename T, typename I>
void embedding_ref(KernelContext& ctx) {
  const Tensor& params = ctx.inputs[0];
  const Tensor& ids_t = ctx.inputs[1];
  const I* ids = ids_t.data<I>();
  const int64_t vocab = params.shape()[0];
  const int64_t row = vocab ? params.num_elements() / vocab : 0;
  const T* src = params.data<T>();
  T* dst = ctx.outputs[0].data<T>();
  check_embedding_ids(ids_t, vocab);
  for (int64_t p = 0; p < ids_t.num_elements(); ++p) {
    const int64_t id = static_cast<int64_t>(ids[p]);
    for (int64_t k = 0; k < row; ++k) dst[p * row + k] = src[id * row + k];
  }
}

}  // namespace

void register_nn_misc_ref(KernelRegistry& r) {
  add_ref(r, "dropout", ops::kFloatDTypes, [](KernelContext& ctx) {
    dispatch_float(ctx.inputs[0].dtype(), "dropout",
                   [&](auto tag) { dropout_ref<decltype(tag)>(ctx); });
  });
  add_ref(r, "dropout_apply", ops::kFloatDTypes, [](KernelContext& ctx) {
    dispatch_float(ctx.inputs[0].dtype(), "dropout_apply",
                   [&](auto tag) { dropout_apply_ref<decltype(tag)>(ctx); });
  });
  add_ref(r, "embedding", ops::kNumericDTypes, [](KernelContext& ctx) {
    dispatch_dtype(ctx.inputs[0].dtype(), [&](auto tag) {
      using T = decltype(tag);
      if (ctx.inputs[1].dtype() == DType::kI32) {
        embedding_ref<T, int32_t>(ctx);
      } else {
        embedding_ref<T, int64_t>(ctx);
      }
    });
  });
}

}  // namespace tern::kernels::ref
