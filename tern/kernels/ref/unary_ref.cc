// Reference kernels for the unary op family: one plain loop per op over compute_t<T> (float for
// the 16-bit floats), std:: math, integers with wrap-around; plus cast and the gradient helpers.
#include <cmath>
#include <limits>
#include <string>
#include <type_traits>

#include "tern/kernels/ref/ref.h"
#include "tern/ops/fused_scalar.h"
#include "tern/ops/infer.h"

namespace tern::kernels::ref {
namespace {

const std::vector<DType> kSignedDTypes = {DType::kF32, DType::kF64, DType::kBF16, DType::kF16,
                                          DType::kI8,  DType::kI32, DType::kI64};

// Calls fn(T{}) for the numeric (non-bool) dtypes; bool throws naming `what`.
template <typename Fn>
void dispatch_numeric(DType dtype, std::string_view what, Fn&& fn) {
  dispatch_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, bool>) {
      throw_error(ErrorCode::kInvalidArgument, what, ": dtype bool is not supported");
    } else {
      fn(tag);
    }
  });
}

// y[i] = f(x[i]) with f applied to compute_t<T>.
template <typename T, typename F>
void map_unary(const Tensor& x, Tensor& y, F f) {
  const T* px = x.data<T>();
  T* py = y.data<T>();
  for (int64_t i = 0; i < x.num_elements(); ++i) {
    py[i] = from_compute<T>(f(static_cast<compute_t<T>>(px[i])));
  }
}

// out[i] = f(a[i], b[i]) for two same-shape inputs (the gradient helpers).
template <typename T, typename F>
void map_pair(const Tensor& a, const Tensor& b, Tensor& out, F f) {
  const T* pa = a.data<T>();
  const T* pb = b.data<T>();
  T* po = out.data<T>();
  for (int64_t i = 0; i < a.num_elements(); ++i) {
    po[i] = from_compute<T>(f(static_cast<compute_t<T>>(pa[i]), static_cast<compute_t<T>>(pb[i])));
  }
}

template <typename F>
void add_float_unary(KernelRegistry& r, const std::string& op, F f) {
  add_ref(r, op, ops::kFloatDTypes, [op, f](KernelContext& ctx) {
    dispatch_float(ctx.inputs[0].dtype(), op,
                   [&](auto tag) { map_unary<decltype(tag)>(ctx.inputs[0], ctx.outputs[0], f); });
  });
}

// `f` sees compute_t<T> for floats and T itself for integers.
template <typename F>
void add_numeric_unary(KernelRegistry& r, const std::string& op, std::vector<DType> dtypes, F f) {
  add_ref(r, op, std::move(dtypes), [op, f](KernelContext& ctx) {
    dispatch_numeric(ctx.inputs[0].dtype(), op,
                     [&](auto tag) { map_unary<decltype(tag)>(ctx.inputs[0], ctx.outputs[0], f); });
  });
}

// `f(dy, x, approximate)`; `approximate` is the node's attribute of that name, false if none.
template <typename F>
void add_grad_helper(KernelRegistry& r, const std::string& op, F f) {
  add_ref(r, op, ops::kFloatDTypes, [op, f](KernelContext& ctx) {
    bool approximate = ctx.attrs.has("approximate") && ctx.attrs.get_bool("approximate");
    dispatch_float(ctx.inputs[0].dtype(), op, [&](auto tag) {
      map_pair<decltype(tag)>(ctx.inputs[0], ctx.inputs[1], ctx.outputs[0],
                              [&](auto dy, auto x) { return f(dy, x, approximate); });
    });
  });
}

// --- integer-safe arithmetic (wraps instead of overflowing) ---

template <typename C>
C neg_value(C x) {
  if constexpr (std::is_integral_v<C>) {
    using U = std::make_unsigned_t<C>;
    return static_cast<C>(static_cast<U>(U{0} - static_cast<U>(x)));
  } else {
    return -x;
  }
}

template <typename C>
C abs_value(C x) {
  if constexpr (std::is_unsigned_v<C>) {
    return x;
  } else {
    return x < C{0} ? neg_value(x) : x;
  }
}

template <typename C>
C square_value(C x) {
  if constexpr (std::is_integral_v<C>) {
    using U = std::make_unsigned_t<C>;
    return static_cast<C>(static_cast<U>(static_cast<U>(x) * static_cast<U>(x)));
  } else {
    return x * x;
  }
}

// --- gelu ---

// The formulas are the ones fusion uses (tern/ops/fused_scalar.h), written once.
template <typename C>
C gelu_value(C x, bool approximate) {
  return approximate ? ops::gelu_tanh_scalar(x) : ops::gelu_erf_scalar(x);
}

template <typename C>
C gelu_derivative(C x, bool approximate) {
  return approximate ? ops::gelu_tanh_grad_scalar(x) : ops::gelu_erf_grad_scalar(x);
}

// --- cast ---

// One element from In to Out: see the `cast` OpDef for the rules.
template <typename Out, typename In>
Out cast_value(In v) {
  using CI = compute_t<In>;
  using CO = compute_t<Out>;
  CI c = static_cast<CI>(v);
  if constexpr (std::is_same_v<Out, bool>) {
    return c != CI(0);
  } else if constexpr (std::is_same_v<In, bool>) {
    return static_cast<Out>(static_cast<CO>(c ? 1 : 0));
  } else if constexpr (std::is_floating_point_v<CI> && std::is_integral_v<Out>) {
    // Saturate: the range bounds are powers of two, exact in any float type.
    constexpr double lo = static_cast<double>(std::numeric_limits<Out>::min());
    constexpr double hi =
        std::is_signed_v<Out> ? -lo : static_cast<double>(std::numeric_limits<Out>::max()) + 1.0;
    double d = static_cast<double>(c);
    if (std::isnan(d)) return Out{0};
    if (d < lo) return std::numeric_limits<Out>::min();
    if (d >= hi) return std::numeric_limits<Out>::max();
    return static_cast<Out>(d);
  } else {
    return static_cast<Out>(static_cast<CO>(c));
  }
}

void cast_ref(KernelContext& ctx) {
  const Tensor& x = ctx.inputs[0];
  Tensor& y = ctx.outputs[0];
  dispatch_dtype(x.dtype(), [&](auto in_tag) {
    using In = decltype(in_tag);
    dispatch_dtype(y.dtype(), [&](auto out_tag) {
      using Out = decltype(out_tag);
      const In* px = x.data<In>();
      Out* py = y.data<Out>();
      for (int64_t i = 0; i < x.num_elements(); ++i) py[i] = cast_value<Out>(px[i]);
    });
  });
}

}  // namespace

void register_unary_ref(KernelRegistry& r) {
  add_numeric_unary(r, "neg", kSignedDTypes, [](auto x) { return neg_value(x); });
  add_numeric_unary(r, "abs", ops::kNumericDTypes, [](auto x) { return abs_value(x); });
  add_numeric_unary(r, "square", ops::kNumericDTypes, [](auto x) { return square_value(x); });
  add_numeric_unary(r, "relu", ops::kNumericDTypes, [](auto x) {
    using C = decltype(x);
    return x < C(0) ? C(0) : x;  // NaN < 0 is false: NaN stays NaN
  });
  add_numeric_unary(r, "sign", ops::kNumericDTypes, [](auto x) {
    using C = decltype(x);
    if (x > C(0)) return C(1);
    if (x < C(0)) return neg_value(C(1));
    return x == x ? C(0) : x;  // zero, or NaN kept
  });

  add_float_unary(r, "exp", [](auto x) { return std::exp(x); });
  add_float_unary(r, "log", [](auto x) { return std::log(x); });
  add_float_unary(r, "log1p", [](auto x) { return std::log1p(x); });
  add_float_unary(r, "sqrt", [](auto x) { return std::sqrt(x); });
  add_float_unary(r, "rsqrt", [](auto x) { return decltype(x)(1) / std::sqrt(x); });
  add_float_unary(r, "tanh", [](auto x) { return std::tanh(x); });
  add_float_unary(r, "sigmoid", [](auto x) {
    using C = decltype(x);
    // Both branches avoid overflow of exp for large |x|.
    if (x >= C(0)) return C(1) / (C(1) + std::exp(-x));
    C e = std::exp(x);
    return e / (C(1) + e);
  });
  add_float_unary(r, "softplus", [](auto x) {
    using C = decltype(x);
    return (x > C(0) ? x : C(0)) + std::log1p(std::exp(-std::fabs(x)));
  });
  add_float_unary(r, "sin", [](auto x) { return std::sin(x); });
  add_float_unary(r, "cos", [](auto x) { return std::cos(x); });

  add_ref(r, "gelu", ops::kFloatDTypes, [](KernelContext& ctx) {
    bool approximate = ctx.attrs.get_bool("approximate");
    dispatch_float(ctx.inputs[0].dtype(), "gelu", [&](auto tag) {
      map_unary<decltype(tag)>(ctx.inputs[0], ctx.outputs[0],
                               [&](auto x) { return gelu_value(x, approximate); });
    });
  });

  add_ref(r, "cast", ops::kAllDTypeList, cast_ref);

  add_grad_helper(r, "relu_grad",
                  [](auto dy, auto x, bool) { return x > decltype(x)(0) ? dy : decltype(dy)(0); });
  add_grad_helper(r, "gelu_grad", [](auto dy, auto x, bool approximate) {
    return dy * gelu_derivative(x, approximate);
  });
  add_grad_helper(r, "sigmoid_grad",
                  [](auto dy, auto y, bool) { return dy * y * (decltype(y)(1) - y); });
  add_grad_helper(r, "tanh_grad",
                  [](auto dy, auto y, bool) { return dy * (decltype(y)(1) - y * y); });
}

}  // namespace tern::kernels::ref
