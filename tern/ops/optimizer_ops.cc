// optimizer ops: fused updates of MANY parameters in one node, mutating the parameter and slot
// variables in place (no outputs), plus `assign`. Hyper-parameters that change per step (learning
// rate, step count) are scalar inputs, so a schedule never forces a recompile; the rest are attrs.
//
// Input layout (see optimizer_layout.h), N = attr num_params:
//   sgd_update      lr, p[N], g[N], (velocity[N] if momentum != 0)
//   adam_update     lr, step, p[N], g[N], m[N], v[N], (vhat[N] if amsgrad)
//   adamw_update    lr, step, p[N], g[N], m[N], v[N], (vhat[N] if amsgrad)
//   rmsprop_update  lr, p[N], g[N], rms[N], (mom[N] if momentum != 0), (mg[N] if centered)
//   assign          var, value
// With attribute copies = [i, j, ...] (ascending parameter indices), one 16-bit tensor (bf16 or
// f16, the parameter's shape; the parameter f32) per listed parameter follows the slots: the
// update writes it as the cast of the updated parameter (round to nearest even), the variable
// store's copy that mixed-precision steps read instead of casting the weight (amp, VariableStore).
// An f32 copy holds the updated parameter rounded to bf16 (the bf16 copy widened, read by matmuls
// that run bf16 operands in f32: widen_contractions).
// With attribute has_apply = true, each update op takes one more input after those: `apply`,
// a bool scalar; when it is false the kernel returns without writing anything (every parameter
// and slot stays bitwise unchanged). Dynamic loss scaling (tern/optim/loss_scale.h) feeds it the
// finiteness of the gradients.
// lr: a floating scalar (any float dtype). step: a scalar (i32, i64, f32 or f64) holding t >= 1,
// the 1-based count of the update being applied (Keras `iterations + 1`). Every parameter, its
// gradient and its slots must have the same dtype (f32 or f64) and shape; parameters may differ
// from each other. Slots start at zero.
//
// Formulas (Keras 3 semantics; g is the gradient, all updates elementwise):
//   sgd:     g += weight_decay * p  (L2 folded into the gradient, like PyTorch's SGD weight_decay;
//            for decoupled decay use adamw_update)
//            momentum == 0: p -= lr * g
//            else:          vel = momentum * vel - lr * g
//                           p += nesterov ? momentum * vel - lr * g : vel
//   adam:    alpha = lr * sqrt(1 - beta2^t) / (1 - beta1^t)
//            m += (g - m) * (1 - beta1);  v += (g^2 - v) * (1 - beta2)
//            amsgrad: vhat = max(vhat, v), and vhat replaces v below
//            p -= alpha * m / (sqrt(v) + epsilon)     (epsilon outside the sqrt, as Keras)
//   adamw:   p -= lr * weight_decay * p  (decoupled, Loshchilov & Hutter; uses lr, not alpha),
//            then the adam step above.
//   rmsprop: rms = rho * rms + (1 - rho) * g^2
//            centered: mg = rho * mg + (1 - rho) * g;  denom = rms - mg^2 + epsilon
//            else:     denom = rms + epsilon          (epsilon inside the sqrt, as Keras)
//            inc = lr * g / sqrt(denom)
//            momentum != 0: mom = momentum * mom + inc;  p -= mom
//            else:          p -= inc
//   assign:  var = value (same dtype and shape), e.g. batch-norm moving averages.
#include <algorithm>

#include "tern/ops/families.h"
#include "tern/ops/infer.h"
#include "tern/ops/optimizer_layout.h"
#include "tern/ops/registry.h"

namespace tern::ops {
namespace {

const std::vector<DType> kOptimizerDTypes = {DType::kF32, DType::kF64};
const uint32_t kUpdateTraits = kTraitMutatesInputs | kTraitStateful | kTraitNotDifferentiable;

void require_unit_interval(const InferContext& ctx, std::string_view attr) {
  double v = ctx.attrs.get_float(attr);
  if (!(v >= 0.0 && v < 1.0)) ctx.fail("attribute ", attr, " must be in [0, 1), got ", v);
}

void require_non_negative(const InferContext& ctx, std::string_view attr) {
  double v = ctx.attrs.get_float(attr);
  if (!(v >= 0.0)) ctx.fail("attribute ", attr, " must be >= 0, got ", v);
}

void require_scalar_input(const InferContext& ctx, size_t i, std::string_view name,
                          const std::vector<DType>& allowed) {
  const TensorType& t = ctx.input(i);
  if (t.shape.rank() != 0) ctx.fail(name, " (input ", i, ") must be a scalar, got shape ", t.shape);
  if (std::find(allowed.begin(), allowed.end(), t.dtype) == allowed.end()) {
    ctx.fail(name, " (input ", i, ") has unsupported dtype ", dtype_name(t.dtype));
  }
}

// Checks the input count, hyper-parameter scalars and that every parameter's gradient and slots
// match it; names the parameter index and both types on a mismatch.
std::vector<TensorType> infer_update(const InferContext& ctx) {
  if (ctx.attrs.get_int("num_params") < 1) {
    ctx.fail("attribute num_params must be >= 1, got ", ctx.attrs.get_int("num_params"));
  }
  OptimizerLayout l = optimizer_layout(ctx.op.name, ctx.attrs);
  if (static_cast<int>(ctx.inputs.size()) != l.num_inputs()) {
    std::string hypers, lists = "params, grads";
    for (const auto& h : l.hypers) hypers += (hypers.empty() ? "" : ", ") + h;
    for (const auto& s : l.slots) lists += ", " + s;
    ctx.fail("expects ", hypers, ", then ", 2 + l.num_slots(), " lists (", lists,
             ") of num_params = ", l.num_params, " tensors each",
             l.num_copies() > 0 ? str_cat(", then ", l.num_copies(), " copies") : "",
             l.has_apply ? ", then apply" : "", ": ", l.num_inputs(), " inputs, got ",
             ctx.inputs.size());
  }
  for (int j = 0; j < l.num_copies(); ++j) {
    int64_t i = l.copies[static_cast<size_t>(j)];
    if (i < 0 || i >= l.num_params || (j > 0 && i <= l.copies[static_cast<size_t>(j - 1)])) {
      ctx.fail("attribute copies must list ascending parameter indices in [0, ", l.num_params,
               "), got ", i, " at position ", j);
    }
    const TensorType& p = ctx.input(static_cast<size_t>(l.param(static_cast<int>(i))));
    const TensorType& c = ctx.input(static_cast<size_t>(l.copy(j)));
    if (p.dtype != DType::kF32 ||
        (c.dtype != DType::kBF16 && c.dtype != DType::kF16 && c.dtype != DType::kF32) ||
        c.shape != p.shape) {
      ctx.fail("copy ", j, " (input ", l.copy(j), ") of parameter ", i, " is ", c.to_string(),
               ": a copy is bf16, f16 or f32 (rounded to bf16) of an f32 parameter's shape, the "
               "parameter is ",
               p.to_string());
    }
  }
  for (int h = 0; h < l.num_hypers(); ++h) {
    const std::string& name = l.hypers[static_cast<size_t>(h)];
    require_scalar_input(
        ctx, static_cast<size_t>(h), name,
        name == "step" ? std::vector<DType>{DType::kI32, DType::kI64, DType::kF32, DType::kF64}
                       : kFloatDTypes);
  }
  if (l.has_apply)
    require_scalar_input(ctx, static_cast<size_t>(l.apply()), "apply", {DType::kBool});
  for (int i = 0; i < l.num_params; ++i) {
    const TensorType& p = ctx.input(static_cast<size_t>(l.param(i)));
    if (std::find(kOptimizerDTypes.begin(), kOptimizerDTypes.end(), p.dtype) ==
        kOptimizerDTypes.end()) {
      ctx.fail("parameter ", i, " has unsupported dtype ", dtype_name(p.dtype),
               " (f32 or f64 only)");
    }
    auto check = [&](int index, std::string_view what) {
      const TensorType& t = ctx.input(static_cast<size_t>(index));
      if (t != p) {
        ctx.fail("parameter ", i, ": ", what, " (input ", index, ") is ", t.to_string(),
                 " but the parameter is ", p.to_string());
      }
    };
    check(l.grad(i), "gradient");
    for (int s = 0; s < l.num_slots(); ++s)
      check(l.slot(s, i), str_cat("slot ", l.slots[static_cast<size_t>(s)]));
  }
  return {};
}

std::vector<TensorType> infer_sgd(const InferContext& ctx) {
  require_unit_interval(ctx, "momentum");
  require_non_negative(ctx, "weight_decay");
  if (ctx.attrs.get_bool("nesterov") && ctx.attrs.get_float("momentum") == 0.0) {
    ctx.fail("nesterov requires momentum > 0");
  }
  return infer_update(ctx);
}

std::vector<TensorType> infer_adam(const InferContext& ctx) {
  require_unit_interval(ctx, "beta1");
  require_unit_interval(ctx, "beta2");
  require_non_negative(ctx, "epsilon");
  if (ctx.attrs.has("weight_decay")) require_non_negative(ctx, "weight_decay");
  return infer_update(ctx);
}

std::vector<TensorType> infer_rmsprop(const InferContext& ctx) {
  require_unit_interval(ctx, "rho");
  require_unit_interval(ctx, "momentum");
  require_non_negative(ctx, "epsilon");
  return infer_update(ctx);
}

std::vector<TensorType> infer_assign(const InferContext& ctx) {
  if (ctx.input(0) != ctx.input(1)) {
    ctx.fail("value ", ctx.input(1).to_string(), " does not match variable ",
             ctx.input(0).to_string());
  }
  return {};
}

std::vector<AttrSpec> adam_attrs(bool decoupled) {
  std::vector<AttrSpec> a = {{"num_params", AttrKind::kInt, std::nullopt},
                             {"beta1", AttrKind::kFloat, 0.9},
                             {"beta2", AttrKind::kFloat, 0.999},
                             {"epsilon", AttrKind::kFloat, 1e-7},
                             {"amsgrad", AttrKind::kBool, false}};
  a.push_back({"copies", AttrKind::kInts, std::vector<int64_t>{}});
  a.push_back({"has_apply", AttrKind::kBool, false});
  if (decoupled) a.push_back({"weight_decay", AttrKind::kFloat, 0.004});
  return a;
}

}  // namespace

void register_optimizer_ops(OpRegistry& r) {
  r.add({.name = "sgd_update",
         .family = "optimizer",
         .doc = "SGD with optional (Nesterov) momentum and L2 weight decay over num_params "
                "parameters in place. Inputs: lr, params, grads, [velocity], [copies], [apply].",
         .inputs = {"lr", "tensors"},
         .variadic = true,
         .min_inputs = 3,
         .attrs = {{"num_params", AttrKind::kInt, std::nullopt},
                   {"momentum", AttrKind::kFloat, 0.0},
                   {"nesterov", AttrKind::kBool, false},
                   {"weight_decay", AttrKind::kFloat, 0.0},
                   {"copies", AttrKind::kInts, std::vector<int64_t>{}},
                   {"has_apply", AttrKind::kBool, false}},
         .dtypes = kOptimizerDTypes,
         .key_input = 1,
         .traits = kUpdateTraits,
         .infer = infer_sgd});
  r.add({.name = "adam_update",
         .family = "optimizer",
         .doc = "Adam (Keras form: bias-corrected lr, epsilon outside sqrt), optional AMSGrad, "
                "in place. Inputs: lr, step, params, grads, m, v, [vhat], [copies], [apply].",
         .inputs = {"lr", "step", "tensors"},
         .variadic = true,
         .min_inputs = 6,
         .attrs = adam_attrs(false),
         .dtypes = kOptimizerDTypes,
         .key_input = 2,
         .traits = kUpdateTraits,
         .infer = infer_adam});
  r.add({.name = "adamw_update",
         .family = "optimizer",
         .doc = "AdamW: decoupled weight decay p -= lr * weight_decay * p, then Adam. Inputs: lr, "
                "step, params, grads, m, v, [vhat], [copies], [apply].",
         .inputs = {"lr", "step", "tensors"},
         .variadic = true,
         .min_inputs = 6,
         .attrs = adam_attrs(true),
         .dtypes = kOptimizerDTypes,
         .key_input = 2,
         .traits = kUpdateTraits,
         .infer = infer_adam});
  r.add({.name = "rmsprop_update",
         .family = "optimizer",
         .doc = "RMSprop (Keras form: epsilon inside sqrt), optional momentum and centering, in "
                "place. Inputs: lr, params, grads, rms, [momentum], [mg], [copies], [apply].",
         .inputs = {"lr", "tensors"},
         .variadic = true,
         .min_inputs = 4,
         .attrs = {{"num_params", AttrKind::kInt, std::nullopt},
                   {"rho", AttrKind::kFloat, 0.9},
                   {"momentum", AttrKind::kFloat, 0.0},
                   {"epsilon", AttrKind::kFloat, 1e-7},
                   {"centered", AttrKind::kBool, false},
                   {"copies", AttrKind::kInts, std::vector<int64_t>{}},
                   {"has_apply", AttrKind::kBool, false}},
         .dtypes = kOptimizerDTypes,
         .key_input = 1,
         .traits = kUpdateTraits,
         .infer = infer_rmsprop});
  r.add({.name = "assign",
         .family = "optimizer",
         .doc = "Copies value into the variable var in place (same dtype and shape).",
         .inputs = {"var", "value"},
         .dtypes = kAllDTypeList,
         .traits = kUpdateTraits,
         .infer = infer_assign});
}

}  // namespace tern::ops
