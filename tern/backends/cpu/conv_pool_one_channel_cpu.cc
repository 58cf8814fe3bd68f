// fused_conv2d of one input channel with a 2x2 max pooling (candidate "cpu_vec"): the first layer
// of a grayscale image model as served (conv -> bias -> relu -> pool, nothing else reading the
// convolution). Each pooled pixel's four 3x3 convolutions run in registers across the output
// channels, from the 4x4 patch of x they read; the pooled value alone is written (oneDNN 2.6's
// direct kernel writes the whole convolution, blocked, for the pooling to read back). The CNN's
// first layer, [n, 28, 28, 1] -> 32 channels with bias and relu, 2 threads (Zen 5,
// `kernel_ab_bench --kernels cpu_vec,onednn`): n = 1 4.2 against 5.2 us, n = 256 0.52 against
// 0.64 ms; the served CNN (`workloads_bench --workload i-cnn`) at batch 1 21.8-28.5 -> 20.9-21.0
// us p50, at batch 256 83-87k -> 89-94k rows/s.
// For multiples of 16 output channels the AVX-512 rows are intrinsics (pooled_row_v4): two
// windows at once, the taps in registers along a row; the training form (argmax) 0.37 -> 0.20 ms
// per step in the CNN, the served CNN at batch 256 97-98k -> 100-105k rows/s.
#include <immintrin.h>
#include <omp.h>

#include <string>
#include <vector>

#include "tern/backends/cpu/cpu_isa.h"
#include "tern/backends/cpu/cpu_kernels.h"
#include "tern/backends/cpu/elementwise_math.h"
#include "tern/backends/cpu/pool_loops.h"
#include "tern/backends/cpu/pooled_conv.h"

TERN_CPU_V3_BEGIN  // the code below is x86-64-v3 (cpu_isa.h)

namespace tern::cpu {
namespace {

namespace vm = vmath;

// Output elements below which one thread runs (a batch-1 call: thread hand-offs cost more).
constexpr int64_t kParallelElements = 1 << 15;

using Geometry = PooledConvGeometry;

// Pooled row `pr` of image `n`: its geometry in locals (the argmax's byte stores may alias
// anything, and GCC reloaded every field of `geo` for every pixel of the patch), the image's
// first pixel and the row's first output element.
struct RowAt {
  RowAt(const PooledConvGeometry& geo, const float* x, int64_t n, int64_t pr)
      : c_out(geo.conv.c_out),
        pw(geo.pool.out_w),
        h(geo.conv.h),
        w(geo.conv.w),
        ih0(2 * pr - geo.conv.pad_top),
        pad_left(geo.conv.pad_left),
        xn(x + n * h * w),
        row((n * geo.pool.out_h + pr) * pw * c_out) {}
  int64_t c_out, pw, h, w, ih0, pad_left;
  const float* xn;
  int64_t row;
};

// The 4 x kCols patch of the row's image from its row ih0 and column iw0 into p (0 in the
// padding).
template <int kCols>
[[gnu::always_inline]] inline void load_patch(const RowAt& r, int64_t iw0, float (&p)[4][kCols]) {
  const int64_t h = r.h, w = r.w, ih0 = r.ih0;
  if (ih0 >= 0 && ih0 + 4 <= h && iw0 >= 0 && iw0 + kCols <= w) {
    const float* xp = r.xn + ih0 * w + iw0;
#pragma GCC unroll 4
    for (int64_t a = 0; a < 4; ++a) {
#pragma GCC unroll 8
      for (int64_t b = 0; b < kCols; ++b) p[a][b] = xp[a * w + b];
    }
    return;
  }
  for (int64_t a = 0; a < 4; ++a) {
    for (int64_t b = 0; b < kCols; ++b) {
      const int64_t ih = ih0 + a, iw = iw0 + b;
      p[a][b] = ih >= 0 && ih < h && iw >= 0 && iw < w ? r.xn[ih * w + iw] : 0.f;
    }
  }
}

// Pooled row `pr` of image `n`: every pooled pixel's 2x2 window of 3x3 convolutions. `bias` is
// never null (zeros without one: a conditional load kept GCC from vectorizing the loop, 8x slower).
// kArgmax (training's form, activation none): the window's first maximum in window order (a NaN
// being the maximum, as max_pool2d_argmax) and its position, into `am`.
template <bool kRelu, bool kArgmax>
[[gnu::always_inline]] inline void pooled_row(const Geometry& geo, const float* x, const float* f,
                                              const float* bias, float* y, uint8_t* am, int64_t n,
                                              int64_t pr) {
  const RowAt r(geo, x, n, pr);
  const int64_t c_out = r.c_out, pw = r.pw;
  for (int64_t pc = 0; pc < pw; ++pc) {
    float p[4][4];  // the 4x4 patch of x under the window's four 3x3 taps
    load_patch(r, 2 * pc - r.pad_left, p);
    const int64_t o = r.row + pc * c_out;
    float* out = y + o;
    uint8_t* code = kArgmax ? am + o : nullptr;
#pragma omp simd
    for (int64_t c = 0; c < c_out; ++c) {
      const float b0 = bias[c];
      float a00 = b0, a01 = b0, a10 = b0, a11 = b0;
#pragma GCC unroll 3
      for (int i = 0; i < 3; ++i) {
#pragma GCC unroll 3
        for (int j = 0; j < 3; ++j) {
          const float w = f[(i * 3 + j) * c_out + c];
          a00 += p[i][j] * w;
          a01 += p[i][j + 1] * w;
          a10 += p[i + 1][j] * w;
          a11 += p[i + 1][j + 1] * w;
        }
      }
      if constexpr (kArgmax) {
        // Straight-line selects of floats, the position too (a loop over the candidates, or
        // selects of integers, left this loop scalar or slower).
        float m = a00, at = 0.f;
        bool better = pool::beats(a01, m);
        m = vm::select(better, a01, m);
        at = vm::select(better, 1.f, at);
        better = pool::beats(a10, m);
        m = vm::select(better, a10, m);
        at = vm::select(better, 2.f, at);
        better = pool::beats(a11, m);
        m = vm::select(better, a11, m);
        at = vm::select(better, 3.f, at);
        out[c] = m;
        code[c] = static_cast<uint8_t>(static_cast<int32_t>(at));
      } else {
        float m = vm::maximum(vm::maximum(a00, a01), vm::maximum(a10, a11));
        if constexpr (kRelu) m = vm::select(m < 0.f, 0.f, m);  // NaN stays NaN
        out[c] = m;
      }
    }
  }
}

template <bool kRelu, bool kArgmax>
void run_rows(const Geometry& geo, const float* x, const float* f, const float* bias, float* y,
              uint8_t* am) {
  const int64_t tasks = geo.conv.n * geo.pool.out_h;
  const bool parallel =
      tasks * geo.pool.out_w * geo.conv.c_out >= kParallelElements && !omp_in_parallel();
#pragma omp parallel for schedule(static) if (parallel)
  for (int64_t t = 0; t < tasks; ++t) {
    pooled_row<kRelu, kArgmax>(geo, x, f, bias, y, am, t / geo.pool.out_h, t % geo.pool.out_h);
  }
}

// max(a, b) keeping NaN, vm::maximum's rule: a NaN operand wins, a first.
TERN_CPU_V4_LOOP inline __m512 maximum_v4(__m512 a, __m512 b) {
  __m512 r = _mm512_maskz_max_ps(0xFFFF, b, a);  // b > a ? b : a, a where either is NaN
  r = _mm512_mask_mov_ps(r, _mm512_cmp_ps_mask(b, b, _CMP_UNORD_Q), b);
  return _mm512_mask_mov_ps(r, _mm512_cmp_ps_mask(a, a, _CMP_UNORD_Q), a);
}

// One window's four convolutions acc[0..4) (window order) pooled into out[0..16) and, with
// kArgmax, the position of the first maximum (pool::beats) into code[0..16).
template <bool kRelu, bool kArgmax>
TERN_CPU_V4_LOOP inline void pool_window_v4(const __m512 (&acc)[4], float* out, uint8_t* code) {
  if constexpr (kArgmax) {
    __m512 m = acc[0];
    __m512i at = _mm512_setzero_si512();
#pragma GCC unroll 3
    for (int q = 1; q < 4; ++q) {
      const __mmask16 larger = _mm512_cmp_ps_mask(acc[q], m, _CMP_GT_OQ);
      const __mmask16 nan =
          _mm512_cmp_ps_mask(acc[q], acc[q], _CMP_UNORD_Q) & _mm512_cmp_ps_mask(m, m, _CMP_ORD_Q);
      const __mmask16 better = larger | nan;
      m = _mm512_mask_mov_ps(m, better, acc[q]);
      at = _mm512_mask_mov_epi32(at, better, _mm512_set1_epi32(q));
    }
    _mm512_storeu_ps(out, m);
    _mm512_mask_cvtepi32_storeu_epi8(code, 0xFFFF, at);
  } else {
    __m512 m = maximum_v4(maximum_v4(acc[0], acc[1]), maximum_v4(acc[2], acc[3]));
    if constexpr (kRelu) {
      const __m512 zero = _mm512_setzero_ps();
      m = _mm512_mask_mov_ps(m, _mm512_cmp_ps_mask(m, zero, _CMP_LT_OQ), zero);  // NaN stays
    }
    _mm512_storeu_ps(out, m);
  }
}

// pooled_row in AVX-512 intrinsics, for c_out a multiple of 16: per group of 16 channels the nine
// taps and the bias stay in registers along the row, and two pooled pixels run together, eight
// accumulators of nine FMAs each. The `omp simd` loop of pooled_row keeps four (one window) and
// GCC does not interleave its iterations: latency-bound, the CNN's first layer in training
// (batch 128, 32 channels, argmax) took 0.37 ms per step.
template <bool kRelu, bool kArgmax>
TERN_CPU_V4_LOOP void pooled_row_v4(const Geometry& geo, const float* x, const float* f,
                                    const float* bias, float* y, uint8_t* am, int64_t n,
                                    int64_t pr) {
  const RowAt r(geo, x, n, pr);
  const int64_t c_out = r.c_out, pw = r.pw;
  for (int64_t c0 = 0; c0 < c_out; c0 += 16) {
    __m512 taps[9];
#pragma GCC unroll 9
    for (int k = 0; k < 9; ++k) taps[k] = _mm512_loadu_ps(f + k * c_out + c0);
    const __m512 b = _mm512_loadu_ps(bias + c0);
    for (int64_t pc = 0; pc < pw; pc += 2) {
      float p[4][6];  // the patch of the two windows (the second's is 0 past the row's end)
      load_patch(r, 2 * pc - r.pad_left, p);
      __m512 acc[2][4];
#pragma GCC unroll 8
      for (int q = 0; q < 8; ++q) acc[q / 4][q % 4] = b;
#pragma GCC unroll 3
      for (int i = 0; i < 3; ++i) {
#pragma GCC unroll 3
        for (int j = 0; j < 3; ++j) {
          const __m512 t = taps[i * 3 + j];
#pragma GCC unroll 2
          for (int px = 0; px < 2; ++px) {
#pragma GCC unroll 4
            for (int q = 0; q < 4; ++q) {
              const float v = p[i + q / 2][2 * px + j + q % 2];
              acc[px][q] = _mm512_fmadd_ps(_mm512_set1_ps(v), t, acc[px][q]);
            }
          }
        }
      }
      for (int px = 0; px < 2 && pc + px < pw; ++px) {
        const int64_t o = r.row + (pc + px) * c_out + c0;
        pool_window_v4<kRelu, kArgmax>(acc[px], y + o, kArgmax ? am + o : nullptr);
      }
    }
  }
}

// The rows on AVX-512: pooled_row_v4 where c_out is a multiple of 16, else pooled_row's loop
// compiled for AVX-512 (16 channels per register). The loop and its pragma are repeated, not
// shared through an inline function: GCC outlines an `omp parallel` body with the target of the
// function that holds the pragma, so a shared body would run its x86-64-v3 build (measured: the
// batch-256 layer fell behind oneDNN's, 1.15 against 0.99 ms, where this form runs ahead of it).
template <bool kRelu, bool kArgmax>
TERN_CPU_V4_LOOP void run_rows_v4(const Geometry& geo, const float* x, const float* f,
                                  const float* bias, float* y, uint8_t* am) {
  const int64_t tasks = geo.conv.n * geo.pool.out_h;
  const bool parallel =
      tasks * geo.pool.out_w * geo.conv.c_out >= kParallelElements && !omp_in_parallel();
  const bool intrinsics = geo.conv.c_out % 16 == 0;
#pragma omp parallel for schedule(static) if (parallel)
  for (int64_t t = 0; t < tasks; ++t) {
    const int64_t n = t / geo.pool.out_h, pr = t % geo.pool.out_h;
    if (intrinsics) {
      pooled_row_v4<kRelu, kArgmax>(geo, x, f, bias, y, am, n, pr);
    } else {
      pooled_row<kRelu, kArgmax>(geo, x, f, bias, y, am, n, pr);
    }
  }
}

// "" if the kernel takes the signature: f32, one input channel, a 3x3 filter at stride 1 and
// dilation 1, a 2x2 max pooling at stride 2 without padding, activation none or relu; the argmax
// form (training's) where one_channel_pooled_training().
std::string decline(const kernels::KernelSignature& sig, Geometry* geo) {
  if (std::string why = decline_pooled_conv(sig, geo, one_channel_pooled_training());
      !why.empty()) {
    return why;
  }
  const ops::Conv2dGeometry& g = geo->conv;
  if (g.c_in != 1 || g.groups != 1) return "more than one input channel";
  if (g.kh != 3 || g.kw != 3 || g.stride_h != 1 || g.stride_w != 1 || g.dil_h != 1 ||
      g.dil_w != 1) {
    return "not a 3x3 filter at stride 1, dilation 1";
  }
  const ops::Pool2dGeometry& p = geo->pool;
  if (!pool_2x2_stride_2(p)) return "not a 2x2 max pooling at stride 2 without padding";
  if (g.n == 0 || g.c_out == 0 || p.out_h == 0 || p.out_w == 0) return "empty";
  return "";
}

class ConvPoolOneChannelKernel final : public kernels::Kernel {
 public:
  ConvPoolOneChannelKernel(const Geometry& geo, bool relu, bool bias)
      : geo_(geo), relu_(relu), bias_(bias) {
    if (!bias_) zeros_.assign(static_cast<size_t>(geo.conv.c_out), 0.f);
  }

  void run(kernels::KernelContext& ctx) override {
    static const bool v4 = cpu_runs_v4_variants();
    const float* x = ctx.inputs[0].data<float>();
    const float* f = ctx.inputs[1].data<float>();
    const float* bias = bias_ ? ctx.inputs[2].data<float>() : zeros_.data();
    float* y = ctx.outputs[0].data<float>();
    if (geo_.argmax) {  // activation none (fused_conv2d's rule)
      uint8_t* am = ctx.outputs[1].data<uint8_t>();
      v4 ? run_rows_v4<false, true>(geo_, x, f, bias, y, am)
         : run_rows<false, true>(geo_, x, f, bias, y, am);
    } else if (relu_) {
      v4 ? run_rows_v4<true, false>(geo_, x, f, bias, y, nullptr)
         : run_rows<true, false>(geo_, x, f, bias, y, nullptr);
    } else {
      v4 ? run_rows_v4<false, false>(geo_, x, f, bias, y, nullptr)
         : run_rows<false, false>(geo_, x, f, bias, y, nullptr);
    }
  }

 private:
  Geometry geo_;
  bool relu_, bias_;
  std::vector<float> zeros_;  // the bias of a convolution without one
};

}  // namespace

void register_conv_pool_one_channel_kernels(kernels::KernelRegistry& r) {
  r.add("fused_conv2d", pooled_conv_candidate<ConvPoolOneChannelKernel>("cpu_vec", &decline));
}

}  // namespace tern::cpu

TERN_CPU_V3_END
