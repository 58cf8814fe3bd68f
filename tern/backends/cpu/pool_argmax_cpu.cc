// Fast max_pool2d_argmax and max_pool2d_grad_argmax (f32, bf16; candidate "cpu_vec"), vectorized
// across channels (NHWC keeps them contiguous). The forward keeps, per window and channel, the
// first maximum in window order (a NaN being the maximum, as ref) and its window position; the
// gradient writes each window's dy where its argmax points, without reading x: for the CNN's
// [128, 26, 26, 32] pooling it reads 3.4 MB (dy and argmax) where max_pool2d_grad reads 14 MB
// (x and dy). Windows that do not overlap (the usual 2x2 / 2) write every covered element of dx
// once, +0 beside each maximum; overlapping windows add their dy up per image in an f32 buffer
// (rounded once into a bf16 dx). Every window counts the argmax values it placed; where one
// named no position inside x, check_pool_argmax names it (as ref does) after the pass.
#include <omp.h>

#include <algorithm>
#include <cstring>
#include <type_traits>
#include <vector>

#include "tern/backends/cpu/cpu_isa.h"
#include "tern/backends/cpu/cpu_kernels.h"
#include "tern/backends/cpu/pool_loops.h"
#include "tern/kernels/index_check.h"
#include "tern/ops/conv_geometry.h"

TERN_CPU_V3_BEGIN  // the code below is x86-64-v3 (cpu_isa.h)

namespace tern::cpu {
namespace {

using kernels::KernelContext;

constexpr int64_t kParallelThreshold = 1 << 15;  // elements of x below which one thread runs
constexpr int64_t kChannelBlock = 64;            // channels handled per SIMD pass

using pool::beats;
using pool::zero_cols;

// The window of output (oh, ow): its corner (h_at, w_at; negative in the padding) and its part
// inside x, [h0, h1) x [w0, w1).
struct Window {
  int64_t h_at, w_at, h0, h1, w0, w1;
  Window(const ops::Pool2dGeometry& g, int64_t oh, int64_t ow)
      : h_at(oh * g.stride_h - g.pad_top),
        w_at(ow * g.stride_w - g.pad_left),
        h0(std::max<int64_t>(h_at, 0)),
        h1(std::min(h_at + g.kh, g.h)),
        w0(std::max<int64_t>(w_at, 0)),
        w1(std::min(w_at + g.kw, g.w)) {}
  int64_t position(const ops::Pool2dGeometry& g, int64_t h, int64_t w) const {
    return (h - h_at) * g.kw + (w - w_at);
  }
};

// --- forward ---

// A 2x2 window inside x over n channels: the first maximum of x00, x01, x10, x11 and its position.
// The maximum is stored as the chosen element's bits (no rounding back to bf16).
template <typename T>
void pool_2x2(const T* __restrict x00, const T* __restrict x01, const T* __restrict x10,
              const T* __restrict x11, T* __restrict y, uint8_t* __restrict argmax, int64_t n) {
  using Bits = std::conditional_t<sizeof(T) == 2, uint16_t, uint32_t>;
  const auto *b00 = reinterpret_cast<const Bits*>(x00), *b01 = reinterpret_cast<const Bits*>(x01),
             *b10 = reinterpret_cast<const Bits*>(x10), *b11 = reinterpret_cast<const Bits*>(x11);
  auto* yb = reinterpret_cast<Bits*>(y);
#pragma omp simd
  for (int64_t c = 0; c < n; ++c) {
    const float a = static_cast<float>(x00[c]), b = static_cast<float>(x01[c]),
                e = static_cast<float>(x10[c]), f = static_cast<float>(x11[c]);
    const uint32_t k1 = pool::beats_mask<uint32_t>(b, a);
    const float best1 = k1 ? b : a;
    const uint32_t k2 = pool::beats_mask<uint32_t>(e, best1);
    const float best2 = k2 ? e : best1;
    const uint32_t k3 = pool::beats_mask<uint32_t>(f, best2);
    const Bits m1 = static_cast<Bits>(k1), m2 = static_cast<Bits>(k2), m3 = static_cast<Bits>(k3);
    Bits v = static_cast<Bits>((m1 & b01[c]) | (~m1 & b00[c]));
    v = static_cast<Bits>((m2 & b10[c]) | (~m2 & v));
    v = static_cast<Bits>((m3 & b11[c]) | (~m3 & v));
    uint32_t p = k1 & 1u;
    p = (p & ~k2) | (k2 & 2u);
    p = (p & ~k3) | (k3 & 3u);
    yb[c] = v;
    argmax[c] = static_cast<uint8_t>(p);
  }
}

// Output row (n, oh): each window's maximum and its position, channel block by channel block.
template <typename T>
void argmax_row(const ops::Pool2dGeometry& g, const T* x, T* y, uint8_t* argmax, int64_t n,
                int64_t oh) {
  for (int64_t ow = 0; ow < g.out_w; ++ow) {
    const Window win(g, oh, ow);
    const int64_t out = ((n * g.out_h + oh) * g.out_w + ow) * g.c;
    if (g.kh == 2 && g.kw == 2 && win.h0 == win.h_at && win.w0 == win.w_at &&
        win.h1 - win.h0 == 2 && win.w1 - win.w0 == 2) {  // the common 2x2 window, fully inside
      const int64_t r0 = ((n * g.h + win.h0) * g.w + win.w0) * g.c, r1 = r0 + g.w * g.c;
      pool_2x2(x + r0, x + r0 + g.c, x + r1, x + r1 + g.c, y + out, argmax + out, g.c);
      continue;
    }
    for (int64_t c0 = 0; c0 < g.c; c0 += kChannelBlock) {
      const int64_t cn = std::min(kChannelBlock, g.c - c0);
      alignas(64) float best[kChannelBlock];
      alignas(64) int32_t pos[kChannelBlock];
      const T* first = x + ((n * g.h + win.h0) * g.w + win.w0) * g.c + c0;
      const int32_t p0 = static_cast<int32_t>(win.position(g, win.h0, win.w0));
      for (int64_t c = 0; c < cn; ++c) best[c] = static_cast<float>(first[c]), pos[c] = p0;
      for (int64_t h = win.h0; h < win.h1; ++h) {
        for (int64_t w = win.w0; w < win.w1; ++w) {
          const int32_t p = static_cast<int32_t>(win.position(g, h, w));
          const T* xs = x + ((n * g.h + h) * g.w + w) * g.c + c0;
#pragma omp simd
          for (int64_t c = 0; c < cn; ++c) {
            const float v = static_cast<float>(xs[c]);
            const bool more = beats(v, best[c]);  // the first maximum (or first NaN) wins
            best[c] = more ? v : best[c];
            pos[c] = more ? p : pos[c];
          }
        }
      }
      T* yo = y + out + c0;
      uint8_t* ao = argmax + out + c0;
#pragma omp simd
      for (int64_t c = 0; c < cn; ++c) {
        yo[c] = static_cast<T>(best[c]);
        ao[c] = static_cast<uint8_t>(pos[c]);
      }
    }
  }
}

template <typename T>
void argmax_row_v3(const ops::Pool2dGeometry& g, const T* x, T* y, uint8_t* argmax, int64_t n,
                   int64_t oh) {
  argmax_row<T>(g, x, y, argmax, n, oh);
}

template <typename T>
TERN_CPU_V4_LOOP void argmax_row_v4(const ops::Pool2dGeometry& g, const T* x, T* y, uint8_t* argmax,
                                    int64_t n, int64_t oh) {
  argmax_row<T>(g, x, y, argmax, n, oh);
}

template <typename T>
void max_pool2d_argmax_typed(KernelContext& ctx) {
  const Tensor& xt = ctx.inputs[0];
  const ops::Pool2dGeometry g = ops::pool2d_geometry(xt.shape(), ctx.attrs);
  const T* x = xt.data<T>();
  T* y = ctx.outputs[0].data<T>();
  uint8_t* argmax = ctx.outputs[1].data<uint8_t>();
  const int64_t tasks = g.n * g.out_h;
  static const bool v4 = cpu_runs_v4_variants();
  const bool parallel = xt.num_elements() >= kParallelThreshold && !omp_in_parallel();
#pragma omp parallel for schedule(static) if (parallel)
  for (int64_t t = 0; t < tasks; ++t) {
    if (v4) {
      argmax_row_v4<T>(g, x, y, argmax, t / g.out_h, t % g.out_h);
    } else {
      argmax_row_v3<T>(g, x, y, argmax, t / g.out_h, t % g.out_h);
    }
  }
}

// --- gradient, windows that do not overlap ---

// d[c] = pos[c] == p ? v[c] : +0, as raw bits (bf16 is a 16-bit pattern, f32 a 32-bit one); how
// many channels matched.
template <typename T>
inline uint32_t select_row(T* __restrict d, const T* __restrict v, const uint8_t* __restrict pos,
                           uint8_t p, int64_t n) {
  using Bits = std::conditional_t<sizeof(T) == 2, uint16_t, uint32_t>;
  auto* db = reinterpret_cast<Bits*>(d);
  const auto* vb = reinterpret_cast<const Bits*>(v);
  uint32_t matched = 0;
#pragma omp simd reduction(+ : matched)
  for (int64_t c = 0; c < n; ++c) {
    matched += pos[c] == p;
    db[c] = pos[c] == p ? vb[c] : Bits(0);
  }
  return matched;
}

// A 2x2 window inside x over n channels: dy to the position argmax names, +0 to the other three.
// Whether every argmax was below 4 (a position of the window).
template <typename T>
bool scatter_2x2(const T* __restrict dy, const uint8_t* __restrict argmax, T* __restrict d00,
                 T* __restrict d01, T* __restrict d10, T* __restrict d11, int64_t n) {
  using Bits = std::conditional_t<sizeof(T) == 2, uint16_t, uint32_t>;
  const auto* g = reinterpret_cast<const Bits*>(dy);
  auto *o00 = reinterpret_cast<Bits*>(d00), *o01 = reinterpret_cast<Bits*>(d01);
  auto *o10 = reinterpret_cast<Bits*>(d10), *o11 = reinterpret_cast<Bits*>(d11);
  Bits bad = 0;  // an OR of masks in the loop's own type (a u8 maximum left it scalar)
#pragma omp simd reduction(| : bad)
  for (int64_t c = 0; c < n; ++c) {
    const Bits p = argmax[c], v = g[c];
    bad |= static_cast<Bits>(Bits(0) - static_cast<Bits>(p > 3));
    o00[c] = v & static_cast<Bits>(Bits(0) - static_cast<Bits>(p == 0));
    o01[c] = v & static_cast<Bits>(Bits(0) - static_cast<Bits>(p == 1));
    o10[c] = v & static_cast<Bits>(Bits(0) - static_cast<Bits>(p == 2));
    o11[c] = v & static_cast<Bits>(Bits(0) - static_cast<Bits>(p == 3));
  }
  return bad == 0;
}

// Output row (n, oh): every element of the input rows its windows cover is written once, each
// window's dy where its argmax points and +0 elsewhere (columns no window covers included).
// Whether every argmax named a position inside x (else its dy went nowhere).
template <typename T>
bool scatter_row(const ops::Pool2dGeometry& g, const T* dy, const uint8_t* argmax, T* dx, int64_t n,
                 int64_t oh) {
  const Window first(g, oh, 0);
  bool placed = true;
  int64_t next_w = 0;  // the first column of rows [h0, h1) not written yet
  for (int64_t ow = 0; ow < g.out_w; ++ow) {
    const Window win(g, oh, ow);
    for (int64_t h = win.h0; h < win.h1; ++h)
      zero_cols(dx + (n * g.h + h) * g.w * g.c, g.c, next_w, win.w0);
    next_w = win.w1;
    const int64_t out = ((n * g.out_h + oh) * g.out_w + ow) * g.c;
    if (g.kh == 2 && g.kw == 2 && win.h0 == win.h_at && win.w0 == win.w_at &&
        win.h1 - win.h0 == 2 && win.w1 - win.w0 == 2) {  // the common 2x2 window, fully inside
      const int64_t r0 = ((n * g.h + win.h0) * g.w + win.w0) * g.c, r1 = r0 + g.w * g.c;
      placed &=
          scatter_2x2(dy + out, argmax + out, dx + r0, dx + r0 + g.c, dx + r1, dx + r1 + g.c, g.c);
      continue;
    }
    uint32_t matched = 0;
    for (int64_t h = win.h0; h < win.h1; ++h) {
      for (int64_t w = win.w0; w < win.w1; ++w) {
        matched += select_row(dx + ((n * g.h + h) * g.w + w) * g.c, dy + out, argmax + out,
                              static_cast<uint8_t>(win.position(g, h, w)), g.c);
      }
    }
    placed &= matched == static_cast<uint32_t>(g.c);
  }
  for (int64_t h = first.h0; h < first.h1; ++h)
    zero_cols(dx + (n * g.h + h) * g.w * g.c, g.c, next_w, g.w);
  return placed;
}

template <typename T>
bool scatter_row_v3(const ops::Pool2dGeometry& g, const T* dy, const uint8_t* argmax, T* dx,
                    int64_t n, int64_t oh) {
  return scatter_row<T>(g, dy, argmax, dx, n, oh);
}

template <typename T>
TERN_CPU_V4_LOOP bool scatter_row_v4(const ops::Pool2dGeometry& g, const T* dy,
                                     const uint8_t* argmax, T* dx, int64_t n, int64_t oh) {
  return scatter_row<T>(g, dy, argmax, dx, n, oh);
}

// Whether every dy was placed (each argmax named a position inside x).
template <typename T>
bool scatter_disjoint(const ops::Pool2dGeometry& g, const T* dy, const uint8_t* argmax, T* dx) {
  pool::zero_uncovered_rows(g, dx);
  const int64_t tasks = g.n * g.out_h;
  static const bool v4 = cpu_runs_v4_variants();
  const bool parallel = g.n * g.h * g.w * g.c >= kParallelThreshold && !omp_in_parallel();
  bool placed = true;
#pragma omp parallel for schedule(static) if (parallel) reduction(& : placed)
  for (int64_t t = 0; t < tasks; ++t) {
    if (v4) {
      placed &= scatter_row_v4<T>(g, dy, argmax, dx, t / g.out_h, t % g.out_h);
    } else {
      placed &= scatter_row_v3<T>(g, dy, argmax, dx, t / g.out_h, t % g.out_h);
    }
  }
  return placed;
}

// --- gradient, overlapping windows ---

// Image n: dy added window by window (output order) into `acc` (an f32 image, zeroed here),
// then stored into dx. Whether every argmax named a position inside x.
template <typename T>
bool scatter_image(const ops::Pool2dGeometry& g, const T* dy, const uint8_t* argmax, T* dx,
                   int64_t n, float* acc) {
  const int64_t image = g.h * g.w * g.c;
  std::fill(acc, acc + image, 0.f);
  bool placed = true;
  for (int64_t oh = 0; oh < g.out_h; ++oh) {
    for (int64_t ow = 0; ow < g.out_w; ++ow) {
      const Window win(g, oh, ow);
      const int64_t out = ((n * g.out_h + oh) * g.out_w + ow) * g.c;
      const T* d = dy + out;
      const uint8_t* a = argmax + out;
      uint32_t matched = 0;
      for (int64_t h = win.h0; h < win.h1; ++h) {
        for (int64_t w = win.w0; w < win.w1; ++w) {
          const uint8_t p = static_cast<uint8_t>(win.position(g, h, w));
          float* o = acc + (h * g.w + w) * g.c;
#pragma omp simd reduction(+ : matched)
          for (int64_t c = 0; c < g.c; ++c) {
            matched += a[c] == p;
            o[c] += a[c] == p ? static_cast<float>(d[c]) : 0.f;
          }
        }
      }
      placed &= matched == static_cast<uint32_t>(g.c);
    }
  }
  T* out = dx + n * image;
#pragma omp simd
  for (int64_t i = 0; i < image; ++i) out[i] = static_cast<T>(acc[i]);
  return placed;
}

template <typename T>
bool scatter_image_v3(const ops::Pool2dGeometry& g, const T* dy, const uint8_t* argmax, T* dx,
                      int64_t n, float* acc) {
  return scatter_image<T>(g, dy, argmax, dx, n, acc);
}

template <typename T>
TERN_CPU_V4_LOOP bool scatter_image_v4(const ops::Pool2dGeometry& g, const T* dy,
                                       const uint8_t* argmax, T* dx, int64_t n, float* acc) {
  return scatter_image<T>(g, dy, argmax, dx, n, acc);
}

template <typename T>
bool scatter_overlapping(const ops::Pool2dGeometry& g, const T* dy, const uint8_t* argmax, T* dx) {
  static const bool v4 = cpu_runs_v4_variants();
  const int64_t image = g.h * g.w * g.c;
  const bool parallel = g.n > 1 && g.n * image >= kParallelThreshold && !omp_in_parallel();
  bool placed = true;
#pragma omp parallel if (parallel) reduction(& : placed)
  {
    thread_local std::vector<float> acc;  // one image, kept from call to call
    if (acc.size() < static_cast<size_t>(image)) acc.resize(static_cast<size_t>(image));
#pragma omp for schedule(static)
    for (int64_t n = 0; n < g.n; ++n) {
      if (v4) {
        placed &= scatter_image_v4<T>(g, dy, argmax, dx, n, acc.data());
      } else {
        placed &= scatter_image_v3<T>(g, dy, argmax, dx, n, acc.data());
      }
    }
  }
  return placed;
}

template <typename T>
void max_pool2d_grad_argmax_typed(KernelContext& ctx) {
  const ops::Pool2dGeometry g =
      ops::pool2d_geometry(Shape(ctx.attrs.get_ints("input_shape")), ctx.attrs);
  const T* dy = ctx.inputs[0].data<T>();
  const uint8_t* argmax = ctx.inputs[1].data<uint8_t>();
  T* dx = ctx.outputs[0].data<T>();
  const bool placed = g.stride_h >= g.kh && g.stride_w >= g.kw
                          ? scatter_disjoint<T>(g, dy, argmax, dx)
                          : scatter_overlapping<T>(g, dy, argmax, dx);
  // A bad argmax matches no position inside x (nothing is written out of bounds): the check
  // then names the first one, as ref's does.
  if (!placed) {
    kernels::check_pool_argmax(g, argmax);
    throw_error(ErrorCode::kInternal, "max_pool2d_grad_argmax: an argmax matched no position");
  }
}

template <typename Fn>
void by_dtype(DType dtype, Fn fn) {
  if (dtype == DType::kBF16) return fn(bfloat16{});
  return fn(float{});
}

}  // namespace

void register_pool_argmax_kernels(kernels::KernelRegistry& r) {
  kernels::add_fn_kernel(r, "max_pool2d_argmax", "cpu_vec", {DType::kF32, DType::kBF16},
                         kVectorPriority, [](KernelContext& ctx) {
                           by_dtype(ctx.inputs[0].dtype(),
                                    [&](auto tag) { max_pool2d_argmax_typed<decltype(tag)>(ctx); });
                         });
  kernels::add_fn_kernel(r, "max_pool2d_grad_argmax", "cpu_vec", {DType::kF32, DType::kBF16},
                         kVectorPriority, [](KernelContext& ctx) {
                           by_dtype(ctx.inputs[0].dtype(), [&](auto tag) {
                             max_pool2d_grad_argmax_typed<decltype(tag)>(ctx);
                           });
                         });
}

}  // namespace tern::cpu

TERN_CPU_V3_END
