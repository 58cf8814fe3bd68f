// Reference kernels for the loss-scale ops (tern/ops/loss_scale_ops.cc): all_finite checks every
// element in the compute type; loss_scale_update applies the grow / shrink rule to its two scalar
// variables in double and stores the results in place.
#include <algorithm>
#include <cmath>

#include "tern/kernels/ref/ref.h"
#include "tern/ops/infer.h"

namespace tern::kernels::ref {
namespace {

template <typename T>
bool all_finite_in(const Tensor& t) {
  const T* x = t.data<T>();
  for (int64_t i = 0; i < t.num_elements(); ++i) {
    if (!std::isfinite(static_cast<compute_t<T>>(x[i]))) return false;
  }
  return true;
}

void all_finite_ref(KernelContext& ctx) {
  bool finite = true;
  for (const Tensor& t : ctx.inputs) {
    if (!finite) break;
    dispatch_float(t.dtype(), "all_finite",
                   [&](auto tag) { finite = all_finite_in<decltype(tag)>(t); });
  }
  ctx.outputs[0].set(0, finite ? 1.0 : 0.0);
}

void loss_scale_update_ref(KernelContext& ctx) {
  // The variables share storage with these handles, so set() writes into the store.
  Tensor scale = ctx.inputs[0];
  Tensor good_steps = ctx.inputs[1];
  const bool finite = ctx.inputs[2].get(0) != 0.0;
  const int64_t interval = ctx.attrs.get_int("growth_interval");
  const double factor = ctx.attrs.get_float("factor");
  double s = scale.get(0);
  int64_t good = good_steps.data<int64_t>()[0];
  if (finite) {
    ++good;
    if (good >= interval) {
      good = 0;
      double grown = s * factor;
      if (std::isfinite(static_cast<double>(Tensor::scalar(scale.dtype(), grown).get(0))))
        s = grown;
    }
  } else {
    s = std::max(s / factor, 1.0);
    good = 0;
  }
  scale.set(0, s);
  good_steps.data<int64_t>()[0] = good;
}

}  // namespace

void register_loss_scale_ref(KernelRegistry& r) {
  add_ref(r, "all_finite", ops::kFloatDTypes, all_finite_ref);
  add_ref(r, "loss_scale_update", {DType::kF32, DType::kF64}, loss_scale_update_ref);
}

}  // namespace tern::kernels::ref
