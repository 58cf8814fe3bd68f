// conv2d_backprop_filter_pooled (candidate "cpu_vec", f32, AVX-512): the filter gradient of a
// one-channel 3x3 convolution under a 2x2 / 2 max pooling, from the pooling's dy and argmax,
// without the convolution-sized gradient (ops::one_channel_pooled_conv says which). Each pooled
// pixel reads the 4x4 patch of x under its window's four 3x3 convolutions into one register; per
// output channel (across the lanes) argmax names which of the four the channel's dy goes to, so
// each filter tap adds dy times one patch value, picked by a permute. The CNN's first layer
// ([128, 28, 28, 1] -> 26x26x32, pooled to 13x13) wrote an 11 MB gradient and read it back twice
// (`step_profile_bench examples/fashion_mnist.toml`: max_pool2d_grad_argmax 0.31-0.41 ms, the
// filter gradient 0.17-0.22, the bias gradient's sum 0.09); this kernel reads 0.4 MB of x and
// 3.5 MB of dy and argmax in 0.19-0.24 ms, and the bias gradient sums dy.
//
// Images are taken in fixed groups whose partial sums are added in group order, so the result
// does not depend on the thread count.
#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "tern/backends/cpu/cpu_isa.h"
#include "tern/backends/cpu/cpu_kernels.h"
#include "tern/backends/cpu/pooled_conv.h"
#include "tern/kernels/index_check.h"
#include "tern/ops/conv_geometry.h"

TERN_CPU_V3_BEGIN  // the code below is x86-64-v3 (cpu_isa.h)

namespace tern::cpu {
namespace {

using kernels::KernelContext;

constexpr int64_t kImagesPerGroup = 8;  // images summed into one partial gradient

using Geometry = PooledConvGeometry;  // its argmax flag unused here

constexpr int K = 3;  // the filter's size (ops::one_channel_pooled_conv)

// One group of images, 16 channels per register (AVX-512), two registers of channels at a time,
// their K x K accumulators in registers over the group's pooled pixels; returns the largest argmax
// it read (a valid one is below 4). Each pixel's 4x4 patch of x is one register, 4 values per row;
// a tap's value for each channel is the patch's element (i + down) * 4 + (j + right), picked by
// one permute, down and right being the bits of argmax (its row and column in the window).
TERN_CPU_V4_LOOP uint8_t group_sum(const Geometry& geo, const float* x, const float* dy,
                                   const uint8_t* argmax, float* acc, int64_t group) {
  const ops::Conv2dGeometry& g = geo.conv;
  const int64_t c_out = g.c_out, ph = geo.pool.out_h, pw = geo.pool.out_w;
  const int64_t n0 = group * kImagesPerGroup, n1 = std::min(g.n, n0 + kImagesPerGroup);
  // Masked forms throughout: the unmasked ones' undefined pass-through operand trips GCC 12's
  // -Wmaybe-uninitialized, as in small_gemm.cc.
  const __m512i two = _mm512_set1_epi32(2);
  __m512i tap_at[K * K];
  for (int i = 0; i < K; ++i) {
    for (int j = 0; j < K; ++j) tap_at[i * K + j] = _mm512_set1_epi32(i * 4 + j);
  }
  __m512i most = _mm512_setzero_si512();
  auto lanes_of = [&](int64_t c) {
    return static_cast<__mmask16>(c >= c_out ? 0u
                                  : c_out - c >= 16
                                      ? 0xFFFFu
                                      : (1u << static_cast<unsigned>(c_out - c)) - 1u);
  };
  for (int64_t c0 = 0; c0 < c_out; c0 += 32) {
    const __mmask16 lanes0 = lanes_of(c0), lanes1 = lanes_of(c0 + 16);
    __m512 sum0[K * K], sum1[K * K];
    for (int t = 0; t < K * K; ++t) sum0[t] = sum1[t] = _mm512_setzero_ps();
    for (int64_t n = n0; n < n1; ++n) {
      for (int64_t pr = 0; pr < ph; ++pr) {
        const int64_t h0 = 2 * pr - g.pad_top;
        for (int64_t pc = 0; pc < pw; ++pc) {
          const int64_t w0 = 2 * pc - g.pad_left;
          // Columns w0 .. w0 + K of each row inside x (a masked load reads no other element).
          unsigned cols = 0;
          for (int b = 0; b <= K; ++b) cols |= (w0 + b >= 0 && w0 + b < g.w) ? 1u << b : 0u;
          __m512 patch = _mm512_setzero_ps();
          for (int a = 0; a <= K; ++a) {
            const int64_t ih = h0 + a;
            if (ih < 0 || ih >= g.h) continue;
            const auto at = reinterpret_cast<uintptr_t>(x + (n * g.h + ih) * g.w) +
                            static_cast<uintptr_t>(w0 * 4);
            const __m512 row = _mm512_maskz_loadu_ps(static_cast<__mmask16>(cols << (4 * a)),
                                                     reinterpret_cast<const float*>(at) - 4 * a);
            patch = _mm512_mask_mov_ps(patch, static_cast<__mmask16>(0xFu << (4 * a)), row);
          }
          const int64_t o = ((n * ph + pr) * pw + pc) * c_out + c0;
          auto channels = [&](__mmask16 lanes, const uint8_t* code_at, const float* dy_at,
                              __m512* sum) {
            const __m512i code =
                _mm512_maskz_cvtepu8_epi32(lanes, _mm_maskz_loadu_epi8(lanes, code_at));
            most = _mm512_mask_max_epu32(most, lanes, most, code);
            // code + (code & 2) = 4 down + right: the window position's offset in the patch
            const __m512i shift =
                _mm512_maskz_add_epi32(0xFFFF, code, _mm512_maskz_and_epi32(0xFFFF, code, two));
            const __m512 grad = _mm512_maskz_loadu_ps(lanes, dy_at);
            for (int t = 0; t < K * K; ++t) {
              const __m512i idx = _mm512_maskz_add_epi32(0xFFFF, shift, tap_at[t]);
              sum[t] =
                  _mm512_fmadd_ps(_mm512_maskz_permutexvar_ps(0xFFFF, idx, patch), grad, sum[t]);
            }
          };
          channels(lanes0, argmax + o, dy + o, sum0);
          if (lanes1 != 0) channels(lanes1, argmax + o + 16, dy + o + 16, sum1);
        }
      }
    }
    for (int t = 0; t < K * K; ++t) {
      _mm512_mask_storeu_ps(acc + t * c_out + c0, lanes0, sum0[t]);
      if (lanes1 != 0) _mm512_mask_storeu_ps(acc + t * c_out + c0 + 16, lanes1, sum1[t]);
    }
  }
  alignas(64) uint32_t codes[16];
  _mm512_store_si512(codes, most);
  return static_cast<uint8_t>(std::min<uint32_t>(255, *std::max_element(codes, codes + 16)));
}

TERN_CPU_V4_LOOP uint8_t partial_sums(const Geometry& geo, const float* x, const float* dy,
                                      const uint8_t* argmax, float* partials, int64_t groups) {
  const int64_t taps = K * K * geo.conv.c_out;
  uint8_t most = 0;
#pragma omp parallel for schedule(static) reduction(max \
                                                    : most) if (groups > 1 && !omp_in_parallel())
  for (int64_t group = 0; group < groups; ++group) {
    most = std::max(most, group_sum(geo, x, dy, argmax, partials + group * taps, group));
  }
  return most;
}

Geometry geometry_of(const ops::Attrs& attrs, const Shape& x) {
  Geometry geo;
  geo.conv = ops::conv2d_geometry(x, Shape(attrs.get_ints("filter_shape")), attrs);
  geo.pool = ops::pool2d_geometry(geo.conv.output_shape(), ops::fused_pool_attrs(attrs));
  return geo;
}

std::string decline(const kernels::KernelSignature& sig) {
  if (sig.inputs[0].dtype != DType::kF32 || sig.outputs[0].dtype != DType::kF32) {
    return "not f32";
  }
  const Geometry geo = geometry_of(*sig.attrs, sig.inputs[0].shape);
  if (!ops::one_channel_pooled_conv(geo.conv, geo.pool)) {
    return "not a one-channel 3x3 convolution under a 2x2 / 2 pooling (one_channel_pooled_conv)";
  }
  return "";
}

class PooledFilterGradKernel final : public kernels::Kernel {
 public:
  explicit PooledFilterGradKernel(const kernels::KernelSignature& sig)
      : geo_(geometry_of(*sig.attrs, sig.inputs[0].shape)) {}

  void run(KernelContext& ctx) override {
    const float* x = ctx.inputs[0].data<float>();
    const float* dy = ctx.inputs[1].data<float>();
    const uint8_t* argmax = ctx.inputs[2].data<uint8_t>();
    float* df = ctx.outputs[0].data<float>();
    const int64_t taps = K * K * geo_.conv.c_out;
    if (taps == 0) return;
    const int64_t groups = (geo_.conv.n + kImagesPerGroup - 1) / kImagesPerGroup;
    if (groups == 0 || geo_.pool.out_h == 0 || geo_.pool.out_w == 0) {
      std::fill(df, df + taps, 0.f);
      return;
    }
    // The calling thread's (a kernel may run on several threads at once, as a served model's).
    thread_local std::vector<float> partials;  // one gradient per group of images
    partials.resize(static_cast<size_t>(groups * taps));
    const uint8_t most = partial_sums(geo_, x, dy, argmax, partials.data(), groups);
    if (most >= 4) {  // names the first bad argmax and its position
      kernels::check_pool_argmax(geo_.pool, argmax, "conv2d_backprop_filter_pooled");
    }
    std::copy(partials.begin(), partials.begin() + taps, df);
    for (int64_t group = 1; group < groups; ++group) {
      const float* part = partials.data() + group * taps;
#pragma omp simd
      for (int64_t i = 0; i < taps; ++i) df[i] += part[i];
    }
  }

 private:
  Geometry geo_;
};

}  // namespace

bool one_channel_pooled_training() {
  static const bool on =
      cpu_runs_v4_variants() &&
      env_switch("TERN_ONE_CHANNEL_POOLED_CONV", "the first layer fused with its pooling",
                 "the convolution-sized output and gradient");
  return on;
}

// Registered where one_channel_pooled_training() (AVX-512, TERN_ONE_CHANNEL_POOLED_CONV not 0):
// else the passes' kernel query finds no kernel for the op, nor for the argmax-pooled forward
// (conv_pool_one_channel_cpu.cc declines it then), so the layer writes its convolution-sized
// output and gradient, as before.
void register_pooled_filter_grad_kernels(kernels::KernelRegistry& r) {
  if (!one_channel_pooled_training()) return;
  kernels::KernelCandidate c;
  c.name = "cpu_vec";
  c.dtypes = {DType::kF32};
  c.priority = kVectorPriority;
  c.decline = decline;
  c.create = [](const kernels::KernelSignature& sig) -> std::unique_ptr<kernels::Kernel> {
    if (std::string why = decline(sig); !why.empty()) {
      throw_error(ErrorCode::kInternal, "cpu_vec ", sig.to_string(), ": ", why);
    }
    return std::make_unique<PooledFilterGradKernel>(sig);
  };
  r.add("conv2d_backprop_filter_pooled", std::move(c));
}

}  // namespace tern::cpu

TERN_CPU_V3_END
