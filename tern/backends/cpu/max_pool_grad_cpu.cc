// Fast max_pool2d_grad (f32, bf16) for non-overlapping windows (stride >= ksize, the usual 2x2/2
// pooling): dx is zero except at each window's first maximum (row-major window order, a NaN
// being the maximum, as ref), which receives that window's dy. One pass over x, dy and dx,
// vectorized across channels; oneDNN's backward needs the forward's workspace, which a separate
// grad node lacks, so its kernel reruns the forward first (Fashion-MNIST CNN, [128, 26, 26, 32]:
// 1.2 ms vs this kernel's one pass).
// Ranked ahead of oneDNN; declines overlapping windows (their gradients add up), which oneDNN
// and ref handle.
#include <omp.h>

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "tern/backends/cpu/cpu_isa.h"
#include "tern/backends/cpu/cpu_kernels.h"
#include "tern/backends/cpu/pool_loops.h"
#include "tern/ops/conv_geometry.h"

TERN_CPU_V3_BEGIN  // the code below is x86-64-v3 (cpu_isa.h)

namespace tern::cpu {
namespace {

using kernels::KernelContext;

constexpr int64_t kParallelThreshold = 1 << 15;  // input elements below which one thread runs
constexpr int64_t kChannelBlock = 64;            // channels handled per SIMD pass

// d[c] = keep[c] ? v[c] : +0, as raw bits (bf16 is a 16-bit pattern, f32 a 32-bit one).
template <typename T>
inline void select_row(T* __restrict d, const T* __restrict v, const int32_t* __restrict pos,
                       int32_t p, int64_t n) {
  using Bits = std::conditional_t<sizeof(T) == 2, uint16_t, uint32_t>;
  auto* db = reinterpret_cast<Bits*>(d);
  const auto* vb = reinterpret_cast<const Bits*>(v);
#pragma omp simd
  for (int64_t c = 0; c < n; ++c) db[c] = pos[c] == p ? vb[c] : Bits(0);
}

using pool::beats;
using pool::beats_mask;  // the mask form keeps grad_2x2's loop vectorized
using pool::zero_cols;

// A 2x2 window over n channels: the gradient goes to the first of x00, x01, x10, x11 (window
// order) holding the maximum (a NaN counts as the maximum); the other three get +0.
template <typename T>
void grad_2x2(const T* __restrict x00, const T* __restrict x01, const T* __restrict x10,
              const T* __restrict x11, const T* __restrict dy, T* __restrict d00, T* __restrict d01,
              T* __restrict d10, T* __restrict d11, int64_t n) {
  using Bits = std::conditional_t<sizeof(T) == 2, uint16_t, uint32_t>;
  const auto* g = reinterpret_cast<const Bits*>(dy);
  auto *o00 = reinterpret_cast<Bits*>(d00), *o01 = reinterpret_cast<Bits*>(d01);
  auto *o10 = reinterpret_cast<Bits*>(d10), *o11 = reinterpret_cast<Bits*>(d11);
  // Integer masks and ANDs (not selects on bools) keep the loop vectorized.
#pragma omp simd
  for (int64_t c = 0; c < n; ++c) {
    float a = static_cast<float>(x00[c]), b = static_cast<float>(x01[c]),
          e = static_cast<float>(x10[c]), f = static_cast<float>(x11[c]);
    Bits k1 = beats_mask<Bits>(b, a);
    float best = k1 ? b : a;
    Bits k2 = beats_mask<Bits>(e, best);
    best = k2 ? e : best;
    Bits k3 = beats_mask<Bits>(f, best);
    Bits v = g[c];
    o11[c] = v & k3;
    o10[c] = v & k2 & static_cast<Bits>(~k3);
    o01[c] = v & k1 & static_cast<Bits>(~(k2 | k3));
    o00[c] = v & static_cast<Bits>(~(k1 | k2 | k3));
  }
}

// One output row (n, oh): every element of the input rows its windows cover is written once:
// each window's dy at its first maximum, +0 elsewhere (columns no window covers included).
template <typename T>
void grad_row(const ops::Pool2dGeometry& g, const T* x, const T* dy, T* dx, int64_t n, int64_t oh) {
  const int64_t h0 = std::max<int64_t>(oh * g.stride_h - g.pad_top, 0);
  const int64_t h1 = std::min(oh * g.stride_h - g.pad_top + g.kh, g.h);
  int64_t next_w = 0;  // the first column of rows [h0, h1) not written yet
  for (int64_t ow = 0; ow < g.out_w; ++ow) {
    const int64_t w0 = std::max<int64_t>(ow * g.stride_w - g.pad_left, 0);
    const int64_t w1 = std::min(ow * g.stride_w - g.pad_left + g.kw, g.w);
    for (int64_t h = h0; h < h1; ++h) zero_cols(dx + (n * g.h + h) * g.w * g.c, g.c, next_w, w0);
    next_w = w1;
    const T* dy_at = dy + ((n * g.out_h + oh) * g.out_w + ow) * g.c;
    if (h1 - h0 == 2 && w1 - w0 == 2) {  // the common 2x2 window, fully inside
      const int64_t r0 = ((n * g.h + h0) * g.w + w0) * g.c, r1 = r0 + g.w * g.c;
      grad_2x2(x + r0, x + r0 + g.c, x + r1, x + r1 + g.c, dy_at, dx + r0, dx + r0 + g.c, dx + r1,
               dx + r1 + g.c, g.c);
      continue;
    }
    for (int64_t c0 = 0; c0 < g.c; c0 += kChannelBlock) {
      const int64_t cn = std::min(kChannelBlock, g.c - c0);
      alignas(64) float best[kChannelBlock];
      alignas(64) int32_t pos[kChannelBlock];
      const T* first = x + ((n * g.h + h0) * g.w + w0) * g.c + c0;
      for (int64_t c = 0; c < cn; ++c) best[c] = static_cast<float>(first[c]), pos[c] = 0;
      int32_t p = 0;
      for (int64_t h = h0; h < h1; ++h) {
        for (int64_t w = w0; w < w1; ++w, ++p) {
          const T* xs = x + ((n * g.h + h) * g.w + w) * g.c + c0;
#pragma omp simd
          for (int64_t c = 0; c < cn; ++c) {
            float v = static_cast<float>(xs[c]);
            bool more = beats(v, best[c]);  // the first maximum (or first NaN) wins
            best[c] = more ? v : best[c];
            pos[c] = more ? p : pos[c];
          }
        }
      }
      p = 0;
      for (int64_t h = h0; h < h1; ++h) {
        for (int64_t w = w0; w < w1; ++w, ++p) {
          select_row(dx + ((n * g.h + h) * g.w + w) * g.c + c0, dy_at + c0, pos, p, cn);
        }
      }
    }
  }
  for (int64_t h = h0; h < h1; ++h) zero_cols(dx + (n * g.h + h) * g.w * g.c, g.c, next_w, g.w);
}

// grad_row compiled for x86-64-v3, and for AVX-512 where cpu_runs_v4_variants(): the CNN's
// [128, 26, 26, 32] gradient 0.70-0.77 -> 0.59-0.65 ms on 2 threads (Zen 5, kernel_ab_bench, 4
// interleaved rounds).
template <typename T>
void grad_row_v3(const ops::Pool2dGeometry& g, const T* x, const T* dy, T* dx, int64_t n,
                 int64_t oh) {
  grad_row<T>(g, x, dy, dx, n, oh);
}

template <typename T>
TERN_CPU_V4_LOOP void grad_row_v4(const ops::Pool2dGeometry& g, const T* x, const T* dy, T* dx,
                                  int64_t n, int64_t oh) {
  grad_row<T>(g, x, dy, dx, n, oh);
}

template <typename T>
void max_pool2d_grad_typed(KernelContext& ctx) {
  const Tensor& xt = ctx.inputs[0];
  const ops::Pool2dGeometry g = ops::pool2d_geometry(xt.shape(), ctx.attrs);
  const T* x = xt.data<T>();
  const T* dy = ctx.inputs[1].data<T>();
  T* dx = ctx.outputs[0].data<T>();
  pool::zero_uncovered_rows(g, dx);
  const int64_t tasks = g.n * g.out_h;
  static const bool v4 = cpu_runs_v4_variants();
  const bool parallel = xt.num_elements() >= kParallelThreshold && !omp_in_parallel();
#pragma omp parallel for schedule(static) if (parallel)
  for (int64_t t = 0; t < tasks; ++t) {
    if (v4) {
      grad_row_v4<T>(g, x, dy, dx, t / g.out_h, t % g.out_h);
    } else {
      grad_row_v3<T>(g, x, dy, dx, t / g.out_h, t % g.out_h);
    }
  }
}

void max_pool2d_grad_cpu(KernelContext& ctx) {
  if (ctx.inputs[0].dtype() == DType::kBF16) {
    max_pool2d_grad_typed<bfloat16>(ctx);
  } else {
    max_pool2d_grad_typed<float>(ctx);
  }
}

std::string decline_overlapping(const kernels::KernelSignature& sig) {
  ops::Pool2dGeometry g = ops::pool2d_geometry(sig.inputs[0].shape, *sig.attrs);
  if (g.stride_h < g.kh || g.stride_w < g.kw) {
    return "overlapping windows (stride < ksize): gradients must be summed";
  }
  return "";
}

}  // namespace

void register_max_pool_grad_kernels(kernels::KernelRegistry& r) {
  kernels::add_fn_kernel(r, "max_pool2d_grad", "cpu_vec", {DType::kF32, DType::kBF16},
                         kOneDnnPriority + 5, max_pool2d_grad_cpu, decline_overlapping);
}

}  // namespace tern::cpu

TERN_CPU_V3_END
