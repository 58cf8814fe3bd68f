// Reference 2-D pooling (max, avg, their gradients) and global_avg_pool over NHWC, accumulating in
// double. Pad positions never take part: max ignores them (a NaN in a window is its maximum), avg
// divides by the in-bounds count (TensorFlow semantics). Registered from register_conv_ref.
#include <algorithm>
#include <vector>

#include "tern/kernels/index_check.h"
#include "tern/kernels/ref/ref.h"
#include "tern/ops/conv_geometry.h"
#include "tern/ops/infer.h"

namespace tern::kernels::ref {
namespace {

template <typename T>
double load(const T* p, int64_t i) {
  return static_cast<double>(static_cast<compute_t<T>>(p[i]));
}

template <typename T>
T store(double v) {
  return static_cast<T>(static_cast<compute_t<T>>(v));
}

// The in-bounds part [h0, h1) x [w0, w1) of output (oh, ow)'s window.
struct Window {
  int64_t h0, h1, w0, w1;
  int64_t count() const { return (h1 - h0) * (w1 - w0); }
};

Window window_of(const ops::Pool2dGeometry& g, int64_t oh, int64_t ow) {
  int64_t hs = oh * g.stride_h - g.pad_top, ws = ow * g.stride_w - g.pad_left;
  return {std::max<int64_t>(hs, 0), std::min(hs + g.kh, g.h), std::max<int64_t>(ws, 0),
          std::min(ws + g.kw, g.w)};
}

int64_t x_index(const ops::Pool2dGeometry& g, int64_t n, int64_t h, int64_t w, int64_t c) {
  return ((n * g.h + h) * g.w + w) * g.c + c;
}

int64_t y_index(const ops::Pool2dGeometry& g, int64_t n, int64_t oh, int64_t ow, int64_t c) {
  return ((n * g.out_h + oh) * g.out_w + ow) * g.c + c;
}

// True if v takes the place of the window's best so far: larger, or the first NaN (NaN
// propagates, as through relu and maximum; once the best is NaN nothing replaces it).
inline bool beats(double v, double best) {
  return v > best || (v != v && best == best);
}

// Flat x index of the first maximum (row-major window order) of window (oh, ow), channel c; a NaN
// is the maximum of a window holding one.
template <typename T>
int64_t argmax_of(const ops::Pool2dGeometry& g, const T* x, int64_t n, int64_t oh, int64_t ow,
                  int64_t c) {
  Window win = window_of(g, oh, ow);
  int64_t best = x_index(g, n, win.h0, win.w0, c);
  for (int64_t h = win.h0; h < win.h1; ++h) {
    for (int64_t w = win.w0; w < win.w1; ++w) {
      int64_t i = x_index(g, n, h, w, c);
      if (beats(load(x, i), load(x, best))) best = i;
    }
  }
  return best;
}

// Calls fn(n, oh, ow, c) for every output element of the pooling.
template <typename Fn>
void for_each_output(const ops::Pool2dGeometry& g, Fn&& fn) {
  for (int64_t n = 0; n < g.n; ++n) {
    for (int64_t oh = 0; oh < g.out_h; ++oh) {
      for (int64_t ow = 0; ow < g.out_w; ++ow) {
        for (int64_t c = 0; c < g.c; ++c) fn(n, oh, ow, c);
      }
    }
  }
}

template <typename T>
void max_pool2d_ref(const ops::Pool2dGeometry& g, const T* x, T* y) {
  for_each_output(g, [&](int64_t n, int64_t oh, int64_t ow, int64_t c) {
    y[y_index(g, n, oh, ow, c)] = x[argmax_of(g, x, n, oh, ow, c)];
  });
}

// max_pool2d, and the window position (row-major over kh x kw from the window's corner, pad
// positions counted) of each maximum.
template <typename T>
void max_pool2d_argmax_ref(const ops::Pool2dGeometry& g, const T* x, T* y, uint8_t* argmax) {
  for_each_output(g, [&](int64_t n, int64_t oh, int64_t ow, int64_t c) {
    const int64_t i = argmax_of(g, x, n, oh, ow, c), o = y_index(g, n, oh, ow, c);
    const int64_t h = i / (g.w * g.c) % g.h, w = i / g.c % g.w;
    y[o] = x[i];
    argmax[o] = static_cast<uint8_t>((h - (oh * g.stride_h - g.pad_top)) * g.kw +
                                     (w - (ow * g.stride_w - g.pad_left)));
  });
}

// Each dy added (in double, in output order) to the element its argmax names.
template <typename T>
void max_pool2d_grad_argmax_ref(const ops::Pool2dGeometry& g, const T* dy, const uint8_t* argmax,
                                T* dx) {
  check_pool_argmax(g, argmax);
  std::vector<double> acc(static_cast<size_t>(g.input_shape().num_elements()), 0.0);
  for_each_output(g, [&](int64_t n, int64_t oh, int64_t ow, int64_t c) {
    const int64_t o = y_index(g, n, oh, ow, c), pos = argmax[o];
    const int64_t h = oh * g.stride_h - g.pad_top + pos / g.kw,
                  w = ow * g.stride_w - g.pad_left + pos % g.kw;
    acc[static_cast<size_t>(x_index(g, n, h, w, c))] += load(dy, o);
  });
  for (size_t i = 0; i < acc.size(); ++i) dx[i] = store<T>(acc[i]);
}

template <typename T>
void avg_pool2d_ref(const ops::Pool2dGeometry& g, const T* x, T* y) {
  for_each_output(g, [&](int64_t n, int64_t oh, int64_t ow, int64_t c) {
    Window win = window_of(g, oh, ow);
    double acc = 0;
    for (int64_t h = win.h0; h < win.h1; ++h) {
      for (int64_t w = win.w0; w < win.w1; ++w) acc += load(x, x_index(g, n, h, w, c));
    }
    y[y_index(g, n, oh, ow, c)] = store<T>(acc / static_cast<double>(win.count()));
  });
}

// Windows overlap when stride < ksize, so contributions are summed in a double buffer in output
// order, then stored once.
template <typename T>
void max_pool2d_grad_ref(const ops::Pool2dGeometry& g, const T* x, const T* dy, T* dx) {
  std::vector<double> acc(static_cast<size_t>(g.input_shape().num_elements()), 0.0);
  for_each_output(g, [&](int64_t n, int64_t oh, int64_t ow, int64_t c) {
    acc[static_cast<size_t>(argmax_of(g, x, n, oh, ow, c))] += load(dy, y_index(g, n, oh, ow, c));
  });
  for (size_t i = 0; i < acc.size(); ++i) dx[i] = store<T>(acc[i]);
}

template <typename T>
void avg_pool2d_grad_ref(const ops::Pool2dGeometry& g, const T* dy, T* dx) {
  std::vector<double> acc(static_cast<size_t>(g.input_shape().num_elements()), 0.0);
  for_each_output(g, [&](int64_t n, int64_t oh, int64_t ow, int64_t c) {
    Window win = window_of(g, oh, ow);
    double share = load(dy, y_index(g, n, oh, ow, c)) / static_cast<double>(win.count());
    for (int64_t h = win.h0; h < win.h1; ++h) {
      for (int64_t w = win.w0; w < win.w1; ++w)
        acc[static_cast<size_t>(x_index(g, n, h, w, c))] += share;
    }
  });
  for (size_t i = 0; i < acc.size(); ++i) dx[i] = store<T>(acc[i]);
}

// y[n, c] = mean over (h, w) of x[n, h, w, c]; the same flat layout serves keepdims.
template <typename T>
void global_avg_pool_ref(const Shape& xs, const T* x, T* y) {
  int64_t n_ = xs[0], hw = xs[1] * xs[2], c_ = xs[3];
  for (int64_t n = 0; n < n_; ++n) {
    for (int64_t c = 0; c < c_; ++c) {
      double acc = 0;
      for (int64_t p = 0; p < hw; ++p) acc += load(x, (n * hw + p) * c_ + c);
      y[n * c_ + c] = store<T>(acc / static_cast<double>(hw));
    }
  }
}

}  // namespace

void register_pool_ref(KernelRegistry& r) {
  add_ref(r, "max_pool2d", ops::kFloatDTypes, [](KernelContext& ctx) {
    const Tensor& x = ctx.inputs[0];
    ops::Pool2dGeometry g = ops::pool2d_geometry(x.shape(), ctx.attrs);
    dispatch_float(x.dtype(), "max_pool2d", [&](auto tag) {
      using T = decltype(tag);
      max_pool2d_ref<T>(g, x.data<T>(), ctx.outputs[0].data<T>());
    });
  });
  add_ref(r, "avg_pool2d", ops::kFloatDTypes, [](KernelContext& ctx) {
    const Tensor& x = ctx.inputs[0];
    ops::Pool2dGeometry g = ops::pool2d_geometry(x.shape(), ctx.attrs);
    dispatch_float(x.dtype(), "avg_pool2d", [&](auto tag) {
      using T = decltype(tag);
      avg_pool2d_ref<T>(g, x.data<T>(), ctx.outputs[0].data<T>());
    });
  });
  add_ref(r, "max_pool2d_grad", ops::kFloatDTypes, [](KernelContext& ctx) {
    const Tensor &x = ctx.inputs[0], &dy = ctx.inputs[1];
    ops::Pool2dGeometry g = ops::pool2d_geometry(x.shape(), ctx.attrs);
    dispatch_float(x.dtype(), "max_pool2d_grad", [&](auto tag) {
      using T = decltype(tag);
      max_pool2d_grad_ref<T>(g, x.data<T>(), dy.data<T>(), ctx.outputs[0].data<T>());
    });
  });
  add_ref(r, "max_pool2d_argmax", ops::kFloatDTypes, [](KernelContext& ctx) {
    const Tensor& x = ctx.inputs[0];
    ops::Pool2dGeometry g = ops::pool2d_geometry(x.shape(), ctx.attrs);
    dispatch_float(x.dtype(), "max_pool2d_argmax", [&](auto tag) {
      using T = decltype(tag);
      max_pool2d_argmax_ref<T>(g, x.data<T>(), ctx.outputs[0].data<T>(),
                               ctx.outputs[1].data<uint8_t>());
    });
  });
  add_ref(r, "max_pool2d_grad_argmax", ops::kFloatDTypes, [](KernelContext& ctx) {
    const Tensor &dy = ctx.inputs[0], &argmax = ctx.inputs[1];
    ops::Pool2dGeometry g =
        ops::pool2d_geometry(Shape(ctx.attrs.get_ints("input_shape")), ctx.attrs);
    dispatch_float(dy.dtype(), "max_pool2d_grad_argmax", [&](auto tag) {
      using T = decltype(tag);
      max_pool2d_grad_argmax_ref<T>(g, dy.data<T>(), argmax.data<uint8_t>(),
                                    ctx.outputs[0].data<T>());
    });
  });
  add_ref(r, "avg_pool2d_grad", ops::kFloatDTypes, [](KernelContext& ctx) {
    const Tensor& dy = ctx.inputs[0];
    ops::Pool2dGeometry g =
        ops::pool2d_geometry(Shape(ctx.attrs.get_ints("input_shape")), ctx.attrs);
    dispatch_float(dy.dtype(), "avg_pool2d_grad", [&](auto tag) {
      using T = decltype(tag);
      avg_pool2d_grad_ref<T>(g, dy.data<T>(), ctx.outputs[0].data<T>());
    });
  });
  add_ref(r, "global_avg_pool", ops::kFloatDTypes, [](KernelContext& ctx) {
    const Tensor& x = ctx.inputs[0];
    dispatch_float(x.dtype(), "global_avg_pool", [&](auto tag) {
      using T = decltype(tag);
      global_avg_pool_ref<T>(x.shape(), x.data<T>(), ctx.outputs[0].data<T>());
    });
  });
}

}  // namespace tern::kernels::ref
