// Reference kernels for the softmax family: softmax/log_softmax along any axis and their gradient
// helpers, and the fused cross-entropy losses. Every reduction runs in double.
#include <cmath>

#include "tern/base/row_error.h"
#include "tern/kernels/ref/ref.h"
#include "tern/ops/infer.h"

namespace tern::kernels::ref {
namespace {

template <typename T>
double load(const T* p, int64_t i) {
  return static_cast<double>(static_cast<compute_t<T>>(p[i]));
}
template <typename T>
void store(T* p, int64_t i, double v) {
  p[i] = static_cast<T>(static_cast<compute_t<T>>(v));
}

// A tensor viewed as [outer, n, inner] around `axis`: row (o, i) holds elements
// o * n * inner + i + k * inner for k in [0, n).
struct AxisRows {
  int64_t outer = 1, n = 1, inner = 1;
  AxisRows(const Shape& s, int64_t axis_attr) {
    int axis = s.normalize_axis(axis_attr);
    for (int d = 0; d < s.rank(); ++d) {
      if (d < axis) outer *= s[d];
      if (d > axis) inner *= s[d];
    }
    n = s[axis];
  }
  template <typename Fn>
  void for_each(Fn&& fn) const {  // fn(base, stride)
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t i = 0; i < inner; ++i) fn(o * n * inner + i, inner);
    }
  }
};

// softmax, or log_softmax when `log`.
template <typename T>
void softmax_ref(KernelContext& ctx, bool log) {
  const T* x = ctx.inputs[0].data<T>();
  T* y = ctx.outputs[0].data<T>();
  AxisRows rows(ctx.inputs[0].shape(), ctx.attrs.get_int("axis"));
  rows.for_each([&](int64_t base, int64_t stride) {
    double mx = -INFINITY;
    for (int64_t k = 0; k < rows.n; ++k) mx = std::fmax(mx, load(x, base + k * stride));
    double sum = 0;
    for (int64_t k = 0; k < rows.n; ++k) sum += std::exp(load(x, base + k * stride) - mx);
    double lse = std::log(sum);
    for (int64_t k = 0; k < rows.n; ++k) {
      int64_t e = base + k * stride;
      double v = load(x, e) - mx;
      store(y, e, log ? v - lse : std::exp(v) / sum);
    }
  });
}

// softmax_grad(dy, y), or log_softmax_grad(dy, y) when `log`.
template <typename T>
void softmax_grad_ref(KernelContext& ctx, bool log) {
  const T* dy = ctx.inputs[0].data<T>();
  const T* y = ctx.inputs[1].data<T>();
  T* dx = ctx.outputs[0].data<T>();
  AxisRows rows(ctx.inputs[0].shape(), ctx.attrs.get_int("axis"));
  rows.for_each([&](int64_t base, int64_t stride) {
    double s = 0;
    for (int64_t k = 0; k < rows.n; ++k) {
      int64_t e = base + k * stride;
      s += log ? load(dy, e) : load(dy, e) * load(y, e);
    }
    for (int64_t k = 0; k < rows.n; ++k) {
      int64_t e = base + k * stride;
      double v = log ? load(dy, e) - std::exp(load(y, e)) * s : load(y, e) * (load(dy, e) - s);
      store(dx, e, v);
    }
  });
}

template <typename T, typename L>
void sparse_xent_ref(KernelContext& ctx) {
  const Tensor& logits = ctx.inputs[0];
  const T* x = logits.data<T>();
  const L* labels = ctx.inputs[1].data<L>();
  T* loss = ctx.outputs[0].data<T>();
  T* dx = ctx.outputs[1].data<T>();
  int64_t rows = logits.shape()[0], c = logits.shape()[1];
  for (int64_t r = 0; r < rows; ++r) {
    int64_t label = static_cast<int64_t>(labels[r]);
    if (label < 0 || label >= c) {
      throw_row_error(ErrorCode::kInvalidArgument, r, rows, "sparse_softmax_cross_entropy: label ",
                      label, " in row ", r, " is out of range [0, ", c, ")");
    }
    const int64_t base = r * c;
    double mx = -INFINITY;
    for (int64_t j = 0; j < c; ++j) mx = std::fmax(mx, load(x, base + j));
    double sum = 0;
    for (int64_t j = 0; j < c; ++j) sum += std::exp(load(x, base + j) - mx);
    store(loss, r, mx + std::log(sum) - load(x, base + label));
    for (int64_t j = 0; j < c; ++j) {
      double p = std::exp(load(x, base + j) - mx) / sum;
      store(dx, base + j, p - (j == label ? 1.0 : 0.0));
    }
  }
}

template <typename T>
void xent_ref(KernelContext& ctx) {
  const Tensor& logits = ctx.inputs[0];
  const T* x = logits.data<T>();
  const T* z = ctx.inputs[1].data<T>();
  T* loss = ctx.outputs[0].data<T>();
  T* dx = ctx.outputs[1].data<T>();
  int64_t c = logits.shape()[logits.rank() - 1];
  int64_t rows = logits.num_elements() / c;
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t base = r * c;
    double mx = -INFINITY;
    for (int64_t j = 0; j < c; ++j) mx = std::fmax(mx, load(x, base + j));
    double sum = 0, zsum = 0;
    for (int64_t j = 0; j < c; ++j) {
      sum += std::exp(load(x, base + j) - mx);
      zsum += load(z, base + j);
    }
    double lse = mx + std::log(sum), l = 0;
    for (int64_t j = 0; j < c; ++j) {
      double xj = load(x, base + j), zj = load(z, base + j);
      l += zj * (lse - xj);
      store(dx, base + j, std::exp(xj - lse) * zsum - zj);
    }
    store(loss, r, l);
  }
}

template <typename T>
void sigmoid_xent_ref(KernelContext& ctx) {
  const T* x = ctx.inputs[0].data<T>();
  const T* z = ctx.inputs[1].data<T>();
  T* y = ctx.outputs[0].data<T>();
  for (int64_t i = 0; i < ctx.outputs[0].num_elements(); ++i) {
    double xv = load(x, i), zv = load(z, i);
    store(y, i, std::fmax(xv, 0.0) - xv * zv + std::log1p(std::exp(-std::fabs(xv))));
  }
}

}  // namespace

void register_softmax_ref(KernelRegistry& r) {
  const auto& f = ops::kFloatDTypes;
  add_ref(r, "softmax", f, [](KernelContext& ctx) {
    dispatch_float(ctx.inputs[0].dtype(), "softmax",
                   [&](auto tag) { softmax_ref<decltype(tag)>(ctx, false); });
  });
  add_ref(r, "log_softmax", f, [](KernelContext& ctx) {
    dispatch_float(ctx.inputs[0].dtype(), "log_softmax",
                   [&](auto tag) { softmax_ref<decltype(tag)>(ctx, true); });
  });
  add_ref(r, "softmax_grad", f, [](KernelContext& ctx) {
    dispatch_float(ctx.inputs[0].dtype(), "softmax_grad",
                   [&](auto tag) { softmax_grad_ref<decltype(tag)>(ctx, false); });
  });
  add_ref(r, "log_softmax_grad", f, [](KernelContext& ctx) {
    dispatch_float(ctx.inputs[0].dtype(), "log_softmax_grad",
                   [&](auto tag) { softmax_grad_ref<decltype(tag)>(ctx, true); });
  });
  add_ref(r, "sparse_softmax_cross_entropy", f, [](KernelContext& ctx) {
    dispatch_float(ctx.inputs[0].dtype(), "sparse_softmax_cross_entropy", [&](auto tag) {
      using T = decltype(tag);
      if (ctx.inputs[1].dtype() == DType::kI32) {
        sparse_xent_ref<T, int32_t>(ctx);
      } else {
        sparse_xent_ref<T, int64_t>(ctx);
      }
    });
  });
  add_ref(r, "softmax_cross_entropy", f, [](KernelContext& ctx) {
    dispatch_float(ctx.inputs[0].dtype(), "softmax_cross_entropy",
                   [&](auto tag) { xent_ref<decltype(tag)>(ctx); });
  });
  add_ref(r, "sigmoid_cross_entropy", f, [](KernelContext& ctx) {
    dispatch_float(ctx.inputs[0].dtype(), "sigmoid_cross_entropy",
                   [&](auto tag) { sigmoid_xent_ref<decltype(tag)>(ctx); });
  });
}

}  // namespace tern::kernels::ref
