// fused_conv2d of one input channel with a 2x2 max pooling (candidate "cpu_vec"): the first layer
// of a grayscale image model as served (conv -> bias -> relu -> pool, nothing else reading the
// convolution). Each pooled pixel's four 3x3 convolutions run in registers across the output
// channels, from the 4x4 patch of x they read; the pooled value alone is written (oneDNN 2.6's
// direct kernel writes the whole convolution, blocked, for the pooling to read back). The CNN's
// first layer, [n, 28, 28, 1] -> 32 channels with bias and relu, 2 threads (Zen 5,
// `kernel_ab_bench --kernels cpu_vec,onednn`): n = 1 4.2 against 5.2 us, n = 256 0.52 against
// 0.64 ms; the served CNN (`workloads_bench --workload i-cnn`) at batch 1 21.8-28.5 -> 20.9-21.0
// us p50, at batch 256 83-87k -> 89-94k rows/s.
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

// Pooled row `pr` of image `n`: every pooled pixel's 2x2 window of 3x3 convolutions. `bias` is
// never null (zeros without one: a conditional load kept GCC from vectorizing the loop, 8x slower).
// kArgmax (training's form, activation none): the window's first maximum in window order (a NaN
// being the maximum, as max_pool2d_argmax) and its position, into `am`.
template <bool kRelu, bool kArgmax>
[[gnu::always_inline]] inline void pooled_row(const Geometry& geo, const float* x, const float* f,
                                              const float* bias, float* y, uint8_t* am, int64_t n,
                                              int64_t pr) {
  const ops::Conv2dGeometry& g = geo.conv;
  const int64_t c_out = g.c_out, pw = geo.pool.out_w;
  for (int64_t pc = 0; pc < pw; ++pc) {
    float p[4][4];  // the 4x4 patch of x under the window's four 3x3 taps (0 in the padding)
    for (int64_t a = 0; a < 4; ++a) {
      const int64_t ih = 2 * pr + a - g.pad_top;
      for (int64_t b = 0; b < 4; ++b) {
        const int64_t iw = 2 * pc + b - g.pad_left;
        const bool inside = ih >= 0 && ih < g.h && iw >= 0 && iw < g.w;
        p[a][b] = inside ? x[(n * g.h + ih) * g.w + iw] : 0.f;
      }
    }
    const int64_t o = ((n * geo.pool.out_h + pr) * pw + pc) * c_out;
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

// The same rows compiled for AVX-512 (16 channels per register). The loop and its pragma are
// repeated, not shared through an inline function: GCC outlines an `omp parallel` body with the
// target of the function that holds the pragma, so a shared body would run its x86-64-v3 build
// (measured: the batch-256 layer fell behind oneDNN's, 1.15 against 0.99 ms, where this form
// runs ahead of it).
template <bool kRelu, bool kArgmax>
TERN_CPU_V4_LOOP void run_rows_v4(const Geometry& geo, const float* x, const float* f,
                                  const float* bias, float* y, uint8_t* am) {
  const int64_t tasks = geo.conv.n * geo.pool.out_h;
  const bool parallel =
      tasks * geo.pool.out_w * geo.conv.c_out >= kParallelElements && !omp_in_parallel();
#pragma omp parallel for schedule(static) if (parallel)
  for (int64_t t = 0; t < tasks; ++t) {
    pooled_row<kRelu, kArgmax>(geo, x, f, bias, y, am, t / geo.pool.out_h, t % geo.pool.out_h);
  }
}

// "" if the kernel takes the signature: f32, one input channel, a 3x3 filter at stride 1 and
// dilation 1, a 2x2 max pooling at stride 2 without padding, activation none or relu.
std::string decline(const kernels::KernelSignature& sig, Geometry* geo) {
  if (std::string why = decline_pooled_conv(sig, geo, /*argmax_ok=*/true); !why.empty()) {
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
