// Reference kernels for the reduce family: one pass over the input in row-major order, each
// element added into its output slot. Floats accumulate in double; integers accumulate in 64 bits
// with wrap-around (as the fixed-width result would), so the result never depends on order.
#include <cmath>
#include <limits>
#include <type_traits>

#include "tern/kernels/ref/ref.h"
#include "tern/ops/infer.h"

namespace tern::kernels::ref {
namespace {

// For each input element in row-major order, the flat index of the output element it reduces
// into (reduced dims get output stride 0).
class ReduceIndex {
 public:
  ReduceIndex(const Shape& in, const std::vector<int64_t>& axes_attr) : dims_(in.dims()) {
    int r = in.rank();
    std::vector<bool> reduced(static_cast<size_t>(r), axes_attr.empty());
    for (int64_t a : axes_attr)
      reduced[static_cast<size_t>(in.normalize_axis(a, "reduce axis"))] = true;
    out_strides_.assign(static_cast<size_t>(r), 0);
    int64_t stride = 1;
    reduce_count_ = 1;
    for (int i = r - 1; i >= 0; --i) {
      size_t u = static_cast<size_t>(i);
      if (reduced[u]) {
        reduce_count_ *= dims_[u];
      } else {
        out_strides_[u] = stride;
        stride *= dims_[u];
      }
    }
    out_count_ = stride;
  }

  int64_t out_count() const { return out_count_; }
  int64_t reduce_count() const { return reduce_count_; }

  // Calls fn(in_index, out_index) for every input element.
  template <typename Fn>
  void for_each(Fn&& fn) const {
    int64_t n = 1;
    for (int64_t d : dims_) n *= d;
    if (n == 0) return;
    std::vector<int64_t> counter(dims_.size(), 0);
    int64_t out = 0;
    for (int64_t i = 0; i < n; ++i) {
      fn(i, out);
      for (size_t k = dims_.size(); k-- > 0;) {
        out += out_strides_[k];
        if (++counter[k] < dims_[k]) break;
        out -= out_strides_[k] * dims_[k];
        counter[k] = 0;
      }
    }
  }

 private:
  std::vector<int64_t> dims_;
  std::vector<int64_t> out_strides_;
  int64_t out_count_ = 1;
  int64_t reduce_count_ = 1;
};

template <typename T>
constexpr bool kIsFloat = std::is_floating_point_v<compute_t<T>>;

// The accumulator: double for floats, wrapping unsigned 64-bit for integers.
template <typename T>
using acc_t = std::conditional_t<kIsFloat<T>, double, uint64_t>;

template <typename T>
acc_t<T> to_acc(T v) {
  if constexpr (kIsFloat<T>) {
    return static_cast<double>(static_cast<compute_t<T>>(v));
  } else {
    return static_cast<uint64_t>(static_cast<int64_t>(v));
  }
}

template <typename T>
T from_acc(acc_t<T> v) {
  if constexpr (kIsFloat<T>) {
    return static_cast<T>(static_cast<compute_t<T>>(v));
  } else {
    return static_cast<T>(static_cast<int64_t>(v));
  }
}

template <typename V>
bool is_nan(V v) {
  if constexpr (std::is_floating_point_v<V>) {
    return std::isnan(v);
  } else {
    return false;
  }
}

enum class ReduceKind { kSum, kMean, kProd, kMax, kMin, kVariance };

template <typename T>
void reduce_ref(KernelContext& ctx, ReduceKind kind) {
  const Tensor& x = ctx.inputs[0];
  Tensor& y = ctx.outputs[0];
  ReduceIndex index(x.shape(), ctx.attrs.get_ints("axes"));
  const T* px = x.data<T>();
  // sum / mean with out_dtype = "f32" from a 16-bit x: the accumulator rounded to f32 instead.
  float* py_f32 = y.dtype() != x.dtype() ? y.data<float>() : nullptr;
  T* py = py_f32 ? nullptr : y.data<T>();
  size_t n_out = static_cast<size_t>(index.out_count());
  if (kind == ReduceKind::kMax || kind == ReduceKind::kMin) {
    using C = compute_t<T>;
    bool is_max = kind == ReduceKind::kMax;
    C init = is_max ? std::numeric_limits<C>::lowest() : std::numeric_limits<C>::max();
    if constexpr (kIsFloat<T>) init = is_max ? -INFINITY : INFINITY;
    std::vector<C> best(n_out, init);
    index.for_each([&](int64_t i, int64_t o) {
      C v = static_cast<C>(px[i]);
      C& b = best[static_cast<size_t>(o)];
      if (is_nan(v) || (is_max ? v > b : v < b)) {
        if (!is_nan(b)) b = v;
      }
    });
    for (size_t o = 0; o < n_out; ++o) py[o] = static_cast<T>(best[o]);
    return;
  }
  using A = acc_t<T>;
  std::vector<A> acc(n_out, kind == ReduceKind::kProd ? A(1) : A(0));
  if (kind == ReduceKind::kProd) {
    index.for_each([&](int64_t i, int64_t o) { acc[static_cast<size_t>(o)] *= to_acc(px[i]); });
  } else {
    index.for_each([&](int64_t i, int64_t o) { acc[static_cast<size_t>(o)] += to_acc(px[i]); });
  }
  if constexpr (kIsFloat<T>) {
    double count = static_cast<double>(index.reduce_count());
    if (kind == ReduceKind::kMean || kind == ReduceKind::kVariance) {
      for (double& a : acc) a /= count;
    }
    if (kind == ReduceKind::kVariance) {
      std::vector<double> sq(n_out, 0.0);
      index.for_each([&](int64_t i, int64_t o) {
        double d = to_acc(px[i]) - acc[static_cast<size_t>(o)];
        sq[static_cast<size_t>(o)] += d * d;
      });
      for (size_t o = 0; o < n_out; ++o) acc[o] = sq[o] / count;
    }
  }
  for (size_t o = 0; o < n_out; ++o) {
    if (py_f32) {
      py_f32[o] = static_cast<float>(acc[o]);
    } else {
      py[o] = from_acc<T>(acc[o]);
    }
  }
}

// Index of the best element along `axis` for every (outer, inner) position; NaN wins (first one).
template <typename T>
void arg_reduce_ref(KernelContext& ctx, bool is_max) {
  const Tensor& x = ctx.inputs[0];
  int axis = x.shape().normalize_axis(ctx.attrs.get_int("axis"), "argmax/argmin axis");
  int64_t outer = 1, inner = 1, n = x.shape()[axis];
  for (int i = 0; i < axis; ++i) outer *= x.shape()[i];
  for (int i = axis + 1; i < x.rank(); ++i) inner *= x.shape()[i];
  using C = compute_t<T>;
  const T* px = x.data<T>();
  int64_t* py = ctx.outputs[0].data<int64_t>();
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t in = 0; in < inner; ++in) {
      const T* base = px + o * n * inner + in;
      int64_t best_k = 0;
      C best = static_cast<C>(base[0]);
      for (int64_t k = 1; k < n && !is_nan(best); ++k) {
        C v = static_cast<C>(base[k * inner]);
        if (is_nan(v) || (is_max ? v > best : v < best)) {
          best = v;
          best_k = k;
        }
      }
      py[o * inner + in] = best_k;
    }
  }
}

// Dispatches over the non-bool dtypes.
template <typename Fn>
void dispatch_numeric(DType dtype, std::string_view op, Fn&& fn) {
  dispatch_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, bool>) {
      throw_error(ErrorCode::kInvalidArgument, op, ": dtype bool is not supported");
    } else {
      fn(tag);
    }
  });
}

void add_reduce_ref(KernelRegistry& r, const std::string& op, std::vector<DType> dtypes,
                    ReduceKind kind) {
  add_ref(r, op, std::move(dtypes), [op, kind](KernelContext& ctx) {
    dispatch_numeric(ctx.inputs[0].dtype(), op, [&](auto tag) {
      using T = decltype(tag);
      if constexpr (kIsFloat<T>) {
        reduce_ref<T>(ctx, kind);
      } else if (kind == ReduceKind::kMean || kind == ReduceKind::kVariance) {
        throw_error(ErrorCode::kInvalidArgument, op, ": dtype ", dtype_name(dtype_of<T>()),
                    " is not a floating type");
      } else {
        reduce_ref<T>(ctx, kind);
      }
    });
  });
}

}  // namespace

void register_reduce_ref(KernelRegistry& r) {
  add_reduce_ref(r, "sum", ops::kNumericDTypes, ReduceKind::kSum);
  add_reduce_ref(r, "mean", ops::kFloatDTypes, ReduceKind::kMean);
  add_reduce_ref(r, "prod", ops::kNumericDTypes, ReduceKind::kProd);
  add_reduce_ref(r, "max", ops::kNumericDTypes, ReduceKind::kMax);
  add_reduce_ref(r, "min", ops::kNumericDTypes, ReduceKind::kMin);
  add_reduce_ref(r, "variance", ops::kFloatDTypes, ReduceKind::kVariance);
  for (bool is_max : {true, false}) {
    std::string op = is_max ? "argmax" : "argmin";
    add_ref(r, op, ops::kNumericDTypes, [op, is_max](KernelContext& ctx) {
      dispatch_numeric(ctx.inputs[0].dtype(), op,
                       [&](auto tag) { arg_reduce_ref<decltype(tag)>(ctx, is_max); });
    });
  }
}

}  // namespace tern::kernels::ref
