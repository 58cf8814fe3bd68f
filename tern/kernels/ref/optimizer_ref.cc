// Reference kernels for the optimizer op family: one plain loop per parameter, every update
// computed in double from the formulas in tern/ops/optimizer_ops.cc and rounded once per stored
// value. Parameters and slots are written in place, then each 16-bit copy (attribute copies) as
// the cast of its updated parameter; with has_apply and apply = false nothing is written at all.
#include <algorithm>
#include <cmath>

#include "tern/kernels/ref/ref.h"
#include "tern/ops/infer.h"
#include "tern/ops/optimizer_layout.h"

namespace tern::kernels::ref {
namespace {

// The kernel writes into its (variable) inputs: a Tensor handle shares storage, so an alias
// gives a writable pointer to the same bytes.
template <typename T>
T* mutable_input(KernelContext& ctx, int index) {
  Tensor alias = ctx.inputs[static_cast<size_t>(index)];
  return alias.data<T>();
}

template <typename T>
const T* input(KernelContext& ctx, int index) {
  return ctx.inputs[static_cast<size_t>(index)].data<T>();
}

double step_count(KernelContext& ctx, std::string_view op) {
  double t = ctx.inputs[1].get(0);
  if (!(t >= 1.0)) throw_error(ErrorCode::kInvalidArgument, op, ": step must be >= 1, got ", t);
  return t;
}

// True when the node has an `apply` input and it is false: the update is skipped.
bool skipped(KernelContext& ctx, const ops::OptimizerLayout& l) {
  return l.has_apply && ctx.inputs[static_cast<size_t>(l.apply())].get(0) == 0.0;
}

// copy = cast(updated parameter), for every parameter that attribute `copies` lists (an f32 copy:
// the parameter rounded to bf16).
void write_copies(KernelContext& ctx, const ops::OptimizerLayout& l) {
  for (int j = 0; j < l.num_copies(); ++j) {
    Tensor copy = ctx.inputs[static_cast<size_t>(l.copy(j))];
    const Tensor& p = ctx.inputs[static_cast<size_t>(
        l.param(static_cast<int>(l.copies[static_cast<size_t>(j)])))];
    copy.copy_from(copy.dtype() == DType::kF32 ? p.cast(DType::kBF16).cast(DType::kF32)
                                               : p.cast(copy.dtype()));
  }
}

template <typename T>
void sgd_ref(KernelContext& ctx) {
  ops::OptimizerLayout l = ops::optimizer_layout("sgd_update", ctx.attrs);
  if (skipped(ctx, l)) return;
  double lr = ctx.inputs[0].get(0);
  double momentum = ctx.attrs.get_float("momentum");
  double wd = ctx.attrs.get_float("weight_decay");
  bool nesterov = ctx.attrs.get_bool("nesterov");
  for (int i = 0; i < l.num_params; ++i) {
    T* p = mutable_input<T>(ctx, l.param(i));
    const T* g = input<T>(ctx, l.grad(i));
    T* vel = momentum != 0.0 ? mutable_input<T>(ctx, l.slot(0, i)) : nullptr;
    int64_t n = ctx.inputs[static_cast<size_t>(l.param(i))].num_elements();
    for (int64_t e = 0; e < n; ++e) {
      double pe = static_cast<double>(p[e]);
      double ge = static_cast<double>(g[e]) + wd * pe;
      if (!vel) {
        p[e] = static_cast<T>(pe - lr * ge);
        continue;
      }
      double v = momentum * static_cast<double>(vel[e]) - lr * ge;
      vel[e] = static_cast<T>(v);
      p[e] = static_cast<T>(pe + (nesterov ? momentum * v - lr * ge : v));
    }
  }
  write_copies(ctx, l);
}

template <typename T>
void adam_ref(KernelContext& ctx, std::string_view op) {
  ops::OptimizerLayout l = ops::optimizer_layout(op, ctx.attrs);
  if (skipped(ctx, l)) return;
  bool decoupled = op == "adamw_update";
  double lr = ctx.inputs[0].get(0);
  double t = step_count(ctx, op);
  double b1 = ctx.attrs.get_float("beta1"), b2 = ctx.attrs.get_float("beta2");
  double eps = ctx.attrs.get_float("epsilon");
  double wd = decoupled ? ctx.attrs.get_float("weight_decay") : 0.0;
  double alpha = lr * std::sqrt(1.0 - std::pow(b2, t)) / (1.0 - std::pow(b1, t));
  int s_vhat = l.slot_index("vhat");
  for (int i = 0; i < l.num_params; ++i) {
    T* p = mutable_input<T>(ctx, l.param(i));
    const T* g = input<T>(ctx, l.grad(i));
    T* m = mutable_input<T>(ctx, l.slot(0, i));
    T* v = mutable_input<T>(ctx, l.slot(1, i));
    T* vhat = s_vhat >= 0 ? mutable_input<T>(ctx, l.slot(s_vhat, i)) : nullptr;
    int64_t n = ctx.inputs[static_cast<size_t>(l.param(i))].num_elements();
    for (int64_t e = 0; e < n; ++e) {
      double pe = static_cast<double>(p[e]);
      if (decoupled) pe -= lr * wd * pe;
      double ge = static_cast<double>(g[e]);
      double me = static_cast<double>(m[e]), ve = static_cast<double>(v[e]);
      me += (ge - me) * (1.0 - b1);
      ve += (ge * ge - ve) * (1.0 - b2);
      m[e] = static_cast<T>(me);
      v[e] = static_cast<T>(ve);
      double denom_v = ve;
      if (vhat) {
        denom_v = std::max(static_cast<double>(vhat[e]), ve);
        vhat[e] = static_cast<T>(denom_v);
      }
      p[e] = static_cast<T>(pe - alpha * me / (std::sqrt(denom_v) + eps));
    }
  }
  write_copies(ctx, l);
}

template <typename T>
void rmsprop_ref(KernelContext& ctx) {
  ops::OptimizerLayout l = ops::optimizer_layout("rmsprop_update", ctx.attrs);
  if (skipped(ctx, l)) return;
  double lr = ctx.inputs[0].get(0);
  double rho = ctx.attrs.get_float("rho"), momentum = ctx.attrs.get_float("momentum");
  double eps = ctx.attrs.get_float("epsilon");
  int s_mom = l.slot_index("momentum"), s_mg = l.slot_index("mg");
  for (int i = 0; i < l.num_params; ++i) {
    T* p = mutable_input<T>(ctx, l.param(i));
    const T* g = input<T>(ctx, l.grad(i));
    T* rms = mutable_input<T>(ctx, l.slot(0, i));
    T* mom = s_mom >= 0 ? mutable_input<T>(ctx, l.slot(s_mom, i)) : nullptr;
    T* mg = s_mg >= 0 ? mutable_input<T>(ctx, l.slot(s_mg, i)) : nullptr;
    int64_t n = ctx.inputs[static_cast<size_t>(l.param(i))].num_elements();
    for (int64_t e = 0; e < n; ++e) {
      double ge = static_cast<double>(g[e]);
      double r = rho * static_cast<double>(rms[e]) + (1.0 - rho) * ge * ge;
      rms[e] = static_cast<T>(r);
      double denom = r + eps;
      if (mg) {
        double a = rho * static_cast<double>(mg[e]) + (1.0 - rho) * ge;
        mg[e] = static_cast<T>(a);
        denom = r - a * a + eps;
      }
      double inc = lr * ge / std::sqrt(denom);
      if (mom) {
        inc = momentum * static_cast<double>(mom[e]) + inc;
        mom[e] = static_cast<T>(inc);
      }
      p[e] = static_cast<T>(static_cast<double>(p[e]) - inc);
    }
  }
  write_copies(ctx, l);
}

void assign_ref(KernelContext& ctx) {
  Tensor var = ctx.inputs[0];
  const Tensor& value = ctx.inputs[1];
  if (var.raw_data() == value.raw_data()) return;
  var.copy_from(value);
}

// Runs `fn` with the parameters' element type (f32 or f64).
template <typename Fn>
void dispatch_params(KernelContext& ctx, int first_param, std::string_view op, Fn&& fn) {
  DType d = ctx.inputs[static_cast<size_t>(first_param)].dtype();
  if (d == DType::kF32) return fn(float{});
  if (d == DType::kF64) return fn(double{});
  throw_error(ErrorCode::kInvalidArgument, op, ": parameters must be f32 or f64, got ",
              dtype_name(d));
}

const std::vector<DType> kParamDTypes = {DType::kF32, DType::kF64};

}  // namespace

void register_optimizer_ref(KernelRegistry& r) {
  add_ref(r, "sgd_update", kParamDTypes, [](KernelContext& ctx) {
    dispatch_params(ctx, 1, "sgd_update", [&](auto tag) { sgd_ref<decltype(tag)>(ctx); });
  });
  for (std::string_view op : {"adam_update", "adamw_update"}) {
    add_ref(r, op, kParamDTypes, [op](KernelContext& ctx) {
      dispatch_params(ctx, 2, op, [&](auto tag) { adam_ref<decltype(tag)>(ctx, op); });
    });
  }
  add_ref(r, "rmsprop_update", kParamDTypes, [](KernelContext& ctx) {
    dispatch_params(ctx, 1, "rmsprop_update", [&](auto tag) { rmsprop_ref<decltype(tag)>(ctx); });
  });
  add_ref(r, "assign", ops::kAllDTypeList, assign_ref);
}

}  // namespace tern::kernels::ref
