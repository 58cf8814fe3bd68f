// Fast max_pool2d (f32, bf16) for non-overlapping windows (stride >= ksize, the usual 2x2/2
// pooling), NaN-propagating as ref: each output is its window's maximum, or the window's first
// NaN. oneDNN's max pooling drops NaN, so its kernel must scan every input for NaN first (a second
// read of x, +60% on [128, 24, 24, 64]); this kernel reads x once, vectorized across channels, and
// is ranked ahead of oneDNN. Declines overlapping windows, which oneDNN (with its NaN guard) and
// ref handle.
#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <cstdint>

#include "tern/backends/cpu/cpu_isa.h"
#include "tern/backends/cpu/cpu_kernels.h"
#include "tern/backends/cpu/elementwise_loops.h"
#include "tern/ops/conv_geometry.h"

TERN_CPU_V3_BEGIN  // the code below is x86-64-v3 (cpu_isa.h)

namespace tern::cpu {
namespace {

using kernels::KernelContext;

constexpr int64_t kParallelThreshold = 1 << 15;  // input elements below which one thread runs
constexpr int64_t kChannelBlock = 64;            // channels handled per SIMD pass

// As ref: a NaN best stays; else a NaN v takes its place (the window's first NaN), else the
// larger (ties keep the earlier). Written as max over NaN-first selects, which GCC vectorizes.
inline float merge(float best, float v) {
  return best != best ? best : (v != v ? v : (best < v ? v : best));
}

// out[c] = the maximum (or first NaN) of a, b, e, f (window order) over n floats. Eight lanes at
// a time with vmaxps, which returns its second operand on ties (so the earlier value stays, as in
// merge: +0 before -0 stays +0) and on NaN, so lanes holding a NaN are redone with merge: three
// vmaxps instead of merge's nine compares and selects (the pooling of the CNN's first layer is
// bound by them, not by memory).
void max_2x2(const float* __restrict a, const float* __restrict b, const float* __restrict e,
             const float* __restrict f, float* __restrict out, int64_t n) {
  int64_t c = 0;
  for (; c + 8 <= n; c += 8) {
    const __m256 va = _mm256_loadu_ps(a + c), vb = _mm256_loadu_ps(b + c);
    const __m256 ve = _mm256_loadu_ps(e + c), vf = _mm256_loadu_ps(f + c);
    const __m256 nan =
        _mm256_or_ps(_mm256_cmp_ps(va, vb, _CMP_UNORD_Q), _mm256_cmp_ps(ve, vf, _CMP_UNORD_Q));
    if (_mm256_testz_ps(nan, nan)) {
      _mm256_storeu_ps(out + c, _mm256_max_ps(vf, _mm256_max_ps(ve, _mm256_max_ps(vb, va))));
      continue;
    }
    for (int64_t k = c; k < c + 8; ++k) out[k] = merge(merge(merge(a[k], b[k]), e[k]), f[k]);
  }
  for (; c < n; ++c) out[c] = merge(merge(merge(a[c], b[c]), e[c]), f[c]);
}

// The same over f32 or bf16 (bf16 in float blocks; the result is one of the inputs, so it
// converts back exactly).
template <typename T>
void max_2x2(const T* a, const T* b, const T* e, const T* f, T* out, int64_t n) {
  float fa[kConvertBlock], fb[kConvertBlock], fe[kConvertBlock], ff[kConvertBlock];
  float fo[kConvertBlock];
  for (int64_t s = 0; s < n; s += kConvertBlock) {
    int64_t m = std::min(kConvertBlock, n - s);
    to_float(a + s, fa, m);
    to_float(b + s, fb, m);
    to_float(e + s, fe, m);
    to_float(f + s, ff, m);
    max_2x2(fa, fb, fe, ff, fo, m);
    from_float(fo, out + s, m);
  }
}

// One window, any size: out[c] for c < cn (<= kChannelBlock) is the maximum (or first NaN) of
// x(h, w)[c] over rows [h0, h1) and columns [w0, w1), where x(h, w) = base + (h * width + w) *
// pixel (NHWC: pixel = channels; oneDNN's nChw16c block: pixel = 16). In float blocks (the result
// is one of the inputs, so bf16 round-trips exactly).
template <typename T>
void window_max(const T* base, int64_t width, int64_t pixel, int64_t h0, int64_t h1, int64_t w0,
                int64_t w1, int64_t cn, T* out) {
  alignas(64) float best[kChannelBlock];
  const T* first = base + (h0 * width + w0) * pixel;
  for (int64_t c = 0; c < cn; ++c) best[c] = static_cast<float>(first[c]);
  for (int64_t h = h0; h < h1; ++h) {
    for (int64_t w = (h == h0 ? w0 + 1 : w0); w < w1; ++w) {
      const T* xs = base + (h * width + w) * pixel;
#pragma omp simd
      for (int64_t c = 0; c < cn; ++c) best[c] = merge(best[c], static_cast<float>(xs[c]));
    }
  }
  for (int64_t c = 0; c < cn; ++c) out[c] = static_cast<T>(best[c]);
}

// One output row (n, oh): each window's maximum over [h0, h1) x [w0, w1), channel blocks of
// kChannelBlock in float (the result is one of the inputs, so bf16 round-trips exactly).
template <typename T>
void pool_row(const ops::Pool2dGeometry& g, const T* x, T* y, int64_t n, int64_t oh) {
  const int64_t h0 = std::max<int64_t>(oh * g.stride_h - g.pad_top, 0);
  const int64_t h1 = std::min(oh * g.stride_h - g.pad_top + g.kh, g.h);
  for (int64_t ow = 0; ow < g.out_w; ++ow) {
    const int64_t w0 = std::max<int64_t>(ow * g.stride_w - g.pad_left, 0);
    const int64_t w1 = std::min(ow * g.stride_w - g.pad_left + g.kw, g.w);
    T* out = y + ((n * g.out_h + oh) * g.out_w + ow) * g.c;
    if (h1 - h0 == 2 && w1 - w0 == 2) {  // the common 2x2 window, fully inside
      const T* x00 = x + ((n * g.h + h0) * g.w + w0) * g.c;
      max_2x2(x00, x00 + g.c, x00 + g.w * g.c, x00 + (g.w + 1) * g.c, out, g.c);
      continue;
    }
    const T* image = x + n * g.h * g.w * g.c;
    for (int64_t c0 = 0; c0 < g.c; c0 += kChannelBlock) {
      window_max(image + c0, g.w, g.c, h0, h1, w0, w1, std::min(kChannelBlock, g.c - c0), out + c0);
    }
  }
}

template <typename T>
void max_pool2d_typed(KernelContext& ctx) {
  const Tensor& xt = ctx.inputs[0];
  const ops::Pool2dGeometry g = ops::pool2d_geometry(xt.shape(), ctx.attrs);
  const T* x = xt.data<T>();
  T* y = ctx.outputs[0].data<T>();
  const int64_t tasks = g.n * g.out_h;
  const bool parallel = xt.num_elements() >= kParallelThreshold && !omp_in_parallel();
#pragma omp parallel for schedule(static) if (parallel)
  for (int64_t t = 0; t < tasks; ++t) pool_row<T>(g, x, y, t / g.out_h, t % g.out_h);
}

void max_pool2d_cpu(KernelContext& ctx) {
  if (ctx.inputs[0].dtype() == DType::kBF16) {
    max_pool2d_typed<bfloat16>(ctx);
  } else {
    max_pool2d_typed<float>(ctx);
  }
}

std::string decline_overlapping(const kernels::KernelSignature& sig) {
  ops::Pool2dGeometry g = ops::pool2d_geometry(sig.inputs[0].shape, *sig.attrs);
  if (g.stride_h < g.kh || g.stride_w < g.kw) {
    return "overlapping windows (stride < ksize): each input is read by several windows";
  }
  if (g.out_h == 0 || g.out_w == 0 || g.c == 0) return "empty tensors are left to other kernels";
  return "";
}

void pool_blocked16(const ops::Pool2dGeometry& g, const float* x, float* y) {
  const int64_t blocks = g.c / 16;
  const int64_t tasks = g.n * g.out_h;
  const bool parallel = g.n * g.h * g.w * g.c >= kParallelThreshold && !omp_in_parallel();
#pragma omp parallel for schedule(static) if (parallel)
  for (int64_t t = 0; t < tasks; ++t) {
    const int64_t n = t / g.out_h, oh = t % g.out_h;
    const int64_t h0 = oh * g.stride_h;
    for (int64_t b = 0; b < blocks; ++b) {
      // Block b of image n: [h][w][16] floats.
      const float* xb = x + (n * blocks + b) * g.h * g.w * 16;
      for (int64_t ow = 0; ow < g.out_w; ++ow) {
        const int64_t w0 = ow * g.stride_w;
        float* out = y + ((n * g.out_h + oh) * g.out_w + ow) * g.c + b * 16;
        if (g.kh == 2 && g.kw == 2) {
          const float* x00 = xb + (h0 * g.w + w0) * 16;
          max_2x2(x00, x00 + 16, x00 + g.w * 16, x00 + (g.w + 1) * 16, out, 16);
          continue;
        }
        window_max(xb, g.w, 16, h0, h0 + g.kh, w0, w0 + g.kw, 16, out);
      }
    }
  }
}

}  // namespace

void max_pool2d_blocked16_to_nhwc(const ops::Pool2dGeometry& g, const float* x, float* y) {
  pool_blocked16(g, x, y);
}

void register_max_pool_kernels(kernels::KernelRegistry& r) {
  kernels::add_fn_kernel(r, "max_pool2d", "cpu_vec", {DType::kF32, DType::kBF16},
                         kOneDnnPriority + 5, max_pool2d_cpu, decline_overlapping);
}

}  // namespace tern::cpu

TERN_CPU_V3_END
