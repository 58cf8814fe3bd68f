// fused_conv2d of a 3x3 filter at stride 1 without padding, with a 2x2 max pooling at stride 2
// (candidate "cpu_conv_pool"): the second layer of a small image model as served (conv -> bias ->
// relu -> pool, nothing else reading the convolution), such as the Fashion-MNIST CNN's 32 -> 64
// channels at 13x13 -> 11x11 -> 5x5. Only the convolution pixels the pooling reads are computed
// (10x10 of the 11x11 there), each pooling window's four in AVX-512 registers, 16 output
// channels per register: a block of up to kMaxPooled pooled pixels of one pooled row takes, per
// input channel and tap, one load of 16 weights (HWIO read in place: 16 output channels are
// contiguous) and four FMAs per pooled pixel, whose inputs are broadcast from x transposed to
// [n][c_in][h][w] (a channel's rows in one place). The pooled maximum keeps NaN (as max_pool2d's
// ref); bias and relu follow it, as they commute with it. oneDNN 2.6 writes the whole convolution
// (blocked) for the pooling to read back. The CNN's layer at batch 1, 2 threads (Zen 5,
// `kernel_ab_bench --kernels cpu_conv_pool,onednn`, interleaved): 9.3-9.4 against 14.7-14.9 us;
// the served CNN (`workloads_bench --workload i-cnn`) 21-22 -> 18.8-19.5 us p50. Blocks of 3
// pooled pixels (12 accumulators): 6 (24) spilled and ran 9.7 us.
// Declines: other dtypes, filters, strides, paddings or poolings; a residual; activations other
// than none and relu; output channels not a multiple of 16; one input channel (the one-channel
// kernel's, conv_pool_one_channel_cpu.cc); more than kMaxBatch images. Registered only where the
// CPU runs AVX-512 (cpu_runs_v4_variants).
#include <omp.h>

#include <algorithm>
#include <string>
#include <vector>

#include <immintrin.h>

#include "tern/backends/cpu/cpu_isa.h"
#include "tern/backends/cpu/cpu_kernels.h"
#include "tern/backends/cpu/pooled_conv.h"
#include "tern/backends/cpu/small_gemm.h"
#include "tern/ops/conv_geometry.h"

TERN_CPU_V3_BEGIN  // the code below is x86-64-v3 (cpu_isa.h); the kernel itself AVX-512

namespace tern::cpu {
namespace {

constexpr int64_t kBlock = 16;  // output channels per register
constexpr int kMaxPooled = 3;   // pooled pixels per register block (12 accumulators)
// Images at most: from 32 oneDNN's kernel runs the CNN's layer faster (0.26 against 0.29 ms; at
// 256 2.1 against 2.4), at 16 this one (0.130 against 0.155 ms).
constexpr int64_t kMaxBatch = 16;

struct Args {
  const float* xt;      // x transposed: [n][c_in][h][w]
  const float* filter;  // HWIO
  const float* bias;    // [c_out] or null
  float* y;             // [n][ph][pw][c_out]
  int64_t n, h, w, c_in, c_out, ph, pw;
  bool relu;
};

// maximum() of elementwise_math.h on 16 lanes: a NaN operand wins, the first one if both.
__attribute__((target("arch=x86-64-v4"))) inline __m512 maximum_v4(__m512 a, __m512 b) {
  // b > a ? b : a; a when either is NaN. (The maskz form with every lane on is the plain
  // instruction; the plain intrinsic trips GCC 12's -Wuninitialized, as in attention_cpu.cc.)
  const __m512 r = _mm512_maskz_max_ps(0xFFFF, b, a);
  const __mmask16 b_only_nan =
      _mm512_cmp_ps_mask(b, b, _CMP_UNORD_Q) & ~_mm512_cmp_ps_mask(a, a, _CMP_UNORD_Q);
  return _mm512_mask_mov_ps(r, b_only_nan, b);
}

// kPooled pooled pixels of pooled row `pr` from pooled column `pc0`, output channels
// [16 b, 16 b + 16) of image `image`.
template <int kPooled>
__attribute__((target("arch=x86-64-v4"))) inline void pooled_block(const Args& a, int64_t image,
                                                                   int64_t b, int64_t pr,
                                                                   int64_t pc0) {
  __m512 acc[4 * kPooled];  // [pooled pixel][window row][window column]
  for (int i = 0; i < 4 * kPooled; ++i) acc[i] = _mm512_setzero_ps();
  const int64_t plane = a.h * a.w;
  const float* x = a.xt + image * a.c_in * plane + 2 * pr * a.w + 2 * pc0;
  const float* f = a.filter + b * kBlock;
  for (int64_t ic = 0; ic < a.c_in; ++ic, x += plane) {
    const float* rows[4] = {x, x + a.w, x + 2 * a.w, x + 3 * a.w};
#pragma GCC unroll 9
    for (int t = 0; t < 9; ++t) {
      const int kh = t / 3, kw = t % 3;
      const __m512 wv = _mm512_loadu_ps(f + (t * a.c_in + ic) * a.c_out);
#pragma GCC unroll 3
      for (int j = 0; j < kPooled; ++j) {
#pragma GCC unroll 2
        for (int r = 0; r < 2; ++r) {
#pragma GCC unroll 2
          for (int s = 0; s < 2; ++s) {
            __m512& c = acc[(j * 2 + r) * 2 + s];
            c = _mm512_fmadd_ps(wv, _mm512_set1_ps(rows[r + kh][2 * j + s + kw]), c);
          }
        }
      }
    }
  }
  const int64_t c0 = b * kBlock;
  const __m512 zero = _mm512_setzero_ps();
  for (int j = 0; j < kPooled; ++j) {
    __m512 m = maximum_v4(maximum_v4(acc[4 * j], acc[4 * j + 1]),
                          maximum_v4(acc[4 * j + 2], acc[4 * j + 3]));
    if (a.bias) m = _mm512_add_ps(m, _mm512_loadu_ps(a.bias + c0));
    if (a.relu) m = _mm512_mask_mov_ps(m, _mm512_cmp_ps_mask(m, zero, _CMP_LT_OQ), zero);
    _mm512_storeu_ps(a.y + ((image * a.ph + pr) * a.pw + pc0 + j) * a.c_out + c0, m);
  }
}

__attribute__((target("arch=x86-64-v4"))) void pooled_row(const Args& a, int64_t image, int64_t b,
                                                          int64_t pr) {
  for (int64_t pc0 = 0; pc0 < a.pw; pc0 += kMaxPooled) {
    switch (std::min<int64_t>(kMaxPooled, a.pw - pc0)) {
      case 3:
        pooled_block<3>(a, image, b, pr, pc0);
        break;
      case 2:
        pooled_block<2>(a, image, b, pr, pc0);
        break;
      default:
        pooled_block<1>(a, image, b, pr, pc0);
        break;
    }
  }
}

// Every pooled row of every block of output channels of every image, spread over the threads.
__attribute__((target("arch=x86-64-v4"))) void run_rows(const Args& a, bool parallel) {
  const int64_t blocks = a.c_out / kBlock, tasks = a.n * blocks * a.ph;
#pragma omp parallel for schedule(static) if (parallel)
  for (int64_t task = 0; task < tasks; ++task) {
    const int64_t image = task / (blocks * a.ph), rest = task % (blocks * a.ph);
    pooled_row(a, image, rest / a.ph, rest % a.ph);
  }
}

using Geometry = PooledConvGeometry;

// "" if the kernel takes the signature (see the file comment).
std::string decline(const kernels::KernelSignature& sig, Geometry* geo) {
  if (std::string why = decline_pooled_conv(sig, geo); !why.empty()) return why;
  const ops::Conv2dGeometry& g = geo->conv;
  if (g.c_in == 1) return "one input channel (the one-channel kernel's)";
  if (g.kh != 3 || g.kw != 3 || g.stride_h != 1 || g.stride_w != 1 || g.dil_h != 1 ||
      g.dil_w != 1 || g.groups != 1 || g.pad_top != 0 || g.pad_left != 0) {
    return "not an ungrouped 3x3 filter at stride 1 and dilation 1 without padding";
  }
  if (g.c_out % kBlock != 0) return "output channels not a multiple of 16";
  const ops::Pool2dGeometry& p = geo->pool;
  if (!pool_2x2_stride_2(p) || p.out_h != g.out_h / 2 || p.out_w != g.out_w / 2) {
    return "not a 2x2 max pooling at stride 2 without padding";
  }
  if (g.n == 0 || p.out_h == 0 || p.out_w == 0) return "empty";
  if (g.n > kMaxBatch) return "a batch of more than 16 images (oneDNN's kernel is faster there)";
  return "";
}

class ConvPoolKernel final : public kernels::Kernel {
 public:
  ConvPoolKernel(const Geometry& geo, bool relu, bool bias)
      : geo_(geo),
        relu_(relu),
        bias_(bias),
        xt_(static_cast<size_t>(geo.conv.n * geo.conv.h * geo.conv.w * geo.conv.c_in)) {}

  void run(kernels::KernelContext& ctx) override {
    const ops::Conv2dGeometry& g = geo_.conv;
    const float* x = ctx.inputs[0].data<float>();
    const int64_t pixels = g.h * g.w;
    const bool parallel = g.n * g.c_out * geo_.pool.out_h >= 2 * kBlock && !omp_in_parallel();
#pragma omp parallel for schedule(static) if (parallel && g.n > 1)
    for (int64_t image = 0; image < g.n; ++image) {
      transpose_f32(pixels, g.c_in, x + image * pixels * g.c_in, g.c_in,
                    xt_.data() + image * pixels * g.c_in, pixels);
    }
    const Args a{xt_.data(),
                 ctx.inputs[1].data<float>(),
                 bias_ ? ctx.inputs[2].data<float>() : nullptr,
                 ctx.outputs[0].data<float>(),
                 g.n,
                 g.h,
                 g.w,
                 g.c_in,
                 g.c_out,
                 geo_.pool.out_h,
                 geo_.pool.out_w,
                 relu_};
    run_rows(a, parallel);
  }

 private:
  Geometry geo_;
  bool relu_, bias_;
  std::vector<float> xt_;
};

}  // namespace

void register_conv_pool_kernels(kernels::KernelRegistry& r) {
  if (!cpu_runs_v4_variants()) return;  // AVX-512 kernels: none to offer
  r.add("fused_conv2d", pooled_conv_candidate<ConvPoolKernel>("cpu_conv_pool", &decline));
}

}  // namespace tern::cpu

TERN_CPU_V3_END
