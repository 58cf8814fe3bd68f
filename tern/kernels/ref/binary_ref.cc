// Reference kernels for the binary op family: one loop over the output, each input read through
// its NumPy-broadcast index; arithmetic in compute_t<T>, integers with wrap-around.
#include <cmath>
#include <string>
#include <type_traits>

#include "tern/kernels/ref/ref.h"
#include "tern/ops/infer.h"

namespace tern::kernels::ref {
namespace {

// c[i] = f(a[ia(i)], b[ib(i)]); f sees compute_t<T> and returns the output element type R
// (T for arithmetic, bool for predicates).
template <typename T, typename R, typename F>
void broadcast_map(const Tensor& a, const Tensor& b, Tensor& c, F f) {
  BroadcastIndex ia(a.shape(), c.shape()), ib(b.shape(), c.shape());
  const T* pa = a.data<T>();
  const T* pb = b.data<T>();
  R* pc = c.data<R>();
  for (int64_t i = 0; i < c.num_elements(); ++i) {
    auto v = f(static_cast<compute_t<T>>(pa[ia(i)]), static_cast<compute_t<T>>(pb[ib(i)]));
    if constexpr (std::is_same_v<R, bool>) {
      pc[i] = v;
    } else {
      pc[i] = from_compute<T>(v);
    }
  }
}

// Registers `op` for `dtypes`; bool inputs are rejected unless kWithBool.
template <typename R, bool kWithBool, typename F>
void add_binary(KernelRegistry& r, const std::string& op, std::vector<DType> dtypes, F f) {
  add_ref(r, op, std::move(dtypes), [op, f](KernelContext& ctx) {
    dispatch_dtype(ctx.inputs[0].dtype(), [&](auto tag) {
      using T = decltype(tag);
      if constexpr (std::is_same_v<T, bool> && !kWithBool) {
        throw_error(ErrorCode::kInvalidArgument, op, ": dtype bool is not supported");
      } else {
        using Out = std::conditional_t<std::is_same_v<R, bool>, bool, T>;
        broadcast_map<T, Out>(ctx.inputs[0], ctx.inputs[1], ctx.outputs[0], f);
      }
    });
  });
}

template <typename F>
void add_arithmetic(KernelRegistry& r, const std::string& op, std::vector<DType> dtypes, F f) {
  add_binary<void, false>(r, op, std::move(dtypes), f);
}

template <typename F>
void add_predicate(KernelRegistry& r, const std::string& op, F f) {
  add_binary<bool, true>(r, op, ops::kAllDTypeList, f);
}

// Integer arithmetic in the unsigned type wraps instead of overflowing (undefined for signed).
template <typename C, typename Op>
C wrapping(C a, C b, Op op) {
  if constexpr (std::is_integral_v<C>) {
    using U = std::make_unsigned_t<C>;
    return static_cast<C>(static_cast<U>(op(static_cast<U>(a), static_cast<U>(b))));
  } else {
    return op(a, b);
  }
}

void where_ref(KernelContext& ctx) {
  const Tensor& cond = ctx.inputs[0];
  const Tensor& a = ctx.inputs[1];
  const Tensor& b = ctx.inputs[2];
  Tensor& c = ctx.outputs[0];
  BroadcastIndex icond(cond.shape(), c.shape()), ia(a.shape(), c.shape()), ib(b.shape(), c.shape());
  dispatch_dtype(c.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const bool* pcond = cond.data<bool>();
    const T* pa = a.data<T>();
    const T* pb = b.data<T>();
    T* pc = c.data<T>();
    for (int64_t i = 0; i < c.num_elements(); ++i) pc[i] = pcond[icond(i)] ? pa[ia(i)] : pb[ib(i)];
  });
}

}  // namespace

void register_binary_ref(KernelRegistry& r) {
  add_arithmetic(r, "add", ops::kNumericDTypes, [](auto a, auto b) {
    return wrapping(a, b, [](auto x, auto y) { return x + y; });
  });
  add_arithmetic(r, "sub", ops::kNumericDTypes, [](auto a, auto b) {
    return wrapping(a, b, [](auto x, auto y) { return x - y; });
  });
  add_arithmetic(r, "mul", ops::kNumericDTypes, [](auto a, auto b) {
    return wrapping(a, b, [](auto x, auto y) { return x * y; });
  });
  add_arithmetic(r, "div", ops::kFloatDTypes, [](auto a, auto b) { return a / b; });
  add_arithmetic(r, "pow", ops::kFloatDTypes, [](auto a, auto b) { return std::pow(a, b); });
  add_arithmetic(r, "maximum", ops::kNumericDTypes, [](auto a, auto b) {
    if (a != a) return a;  // NaN propagates
    if (b != b) return b;
    return a < b ? b : a;
  });
  add_arithmetic(r, "minimum", ops::kNumericDTypes, [](auto a, auto b) {
    if (a != a) return a;
    if (b != b) return b;
    return b < a ? b : a;
  });

  add_predicate(r, "equal", [](auto a, auto b) { return a == b; });
  add_predicate(r, "not_equal", [](auto a, auto b) { return a != b; });
  add_predicate(r, "less", [](auto a, auto b) { return a < b; });
  add_predicate(r, "less_equal", [](auto a, auto b) { return a <= b; });
  add_predicate(r, "greater", [](auto a, auto b) { return a > b; });
  add_predicate(r, "greater_equal", [](auto a, auto b) { return a >= b; });

  const std::vector<DType> bool_only = {DType::kBool};
  add_ref(r, "logical_and", bool_only, [](KernelContext& ctx) {
    broadcast_map<bool, bool>(ctx.inputs[0], ctx.inputs[1], ctx.outputs[0],
                              [](bool a, bool b) { return a && b; });
  });
  add_ref(r, "logical_or", bool_only, [](KernelContext& ctx) {
    broadcast_map<bool, bool>(ctx.inputs[0], ctx.inputs[1], ctx.outputs[0],
                              [](bool a, bool b) { return a || b; });
  });
  add_ref(r, "logical_not", bool_only, [](KernelContext& ctx) {
    const bool* px = ctx.inputs[0].data<bool>();
    bool* py = ctx.outputs[0].data<bool>();
    for (int64_t i = 0; i < ctx.inputs[0].num_elements(); ++i) py[i] = !px[i];
  });

  add_ref(r, "where", ops::kAllDTypeList, where_ref);
}

}  // namespace tern::kernels::ref
