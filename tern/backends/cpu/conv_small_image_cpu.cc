// conv2d / fused_conv2d of 3x3 filters over small images against a constant filter (candidate
// "cpu_small_image"): a served model's late layers at batch 1, such as ResNet-18's 512 channels at
// 4x4, where a call multiplies a 9.4 MB filter by 16 output pixels and the time is the time to read
// the filter. The filter is packed once per buffer into [c_out / 16][c_in][9 taps][16] (kept while
// the buffer is the same, as the oneDNN kernels keep their reordered weights); each block of 16
// output channels then streams its part of it once per image, with every output pixel of the
// image in an AVX-512 register: per input channel, 9 loads of 16 weights and one FMA per tap and
// output pixel whose input lies inside the image (the taps over the padding are left out when
// the geometry is compiled, below). x is read transposed, [n][c_in][h * w], so an input channel's
// pixels lie together (one cache line at 4x4). Epilogue: + bias, + residual, relu keeping NaN, in
// ref's order. Served ResNet-18 at batch 1 (Zen 5, 2 threads; the filter cold, as in a model whose
// filters exceed the L3): 512 -> 512 at 4x4 0.42 ms with oneDNN 2.6's brgconv (22 GB/s of filter)
// against 0.20-0.22 ms here (42-47 GB/s, the machine's read bandwidth ~50-60). Declines: a filter
// that is not constant (it would be packed at every call), other dtypes, other geometries
// (kGeometries), output channels not a multiple of 16, more than kMaxPixels output pixels (batch x
// height x width: there the multiplications, not the filter, take the time, and oneDNN's kernels or
// Winograd run them). Registered only where the CPU runs AVX-512 (cpu_runs_v4_variants).
#include <omp.h>

#include <algorithm>
#include <array>
#include <string>
#include <utility>
#include <vector>

#include <immintrin.h>

#include "tern/backends/cpu/cpu_isa.h"
#include "tern/backends/cpu/cpu_kernels.h"
#include "tern/backends/cpu/onednn_common.h"
#include "tern/backends/cpu/small_gemm.h"
#include "tern/ops/conv_geometry.h"

TERN_CPU_V3_BEGIN  // the code below is x86-64-v3 (cpu_isa.h); the kernel itself AVX-512

namespace tern::cpu {
namespace {

constexpr int64_t kBlock = 16;      // output channels per register
constexpr int64_t kTaps = 9;        // 3x3
constexpr int64_t kMaxPixels = 64;  // output pixels of a call (batch x out_h x out_w) at most

// A geometry the kernel is compiled for: out x out outputs from in x in inputs at `stride`, the
// first row and column of taps `pad` pixels before the image (the rest of the padding follows).
struct CompiledGeometry {
  int out, in, stride, pad;
};

// Stride 1 with one pixel of padding (SAME); stride 2 from an even size with no padding before
// (TensorFlow's SAME) or one (PyTorch's padding=1), and from an odd size with one (SAME).
constexpr std::array<CompiledGeometry, 11> kGeometries = {{{1, 1, 1, 1},
                                                           {2, 2, 1, 1},
                                                           {4, 4, 1, 1},
                                                           {1, 2, 2, 0},
                                                           {2, 4, 2, 0},
                                                           {4, 8, 2, 0},
                                                           {1, 2, 2, 1},
                                                           {2, 4, 2, 1},
                                                           {4, 8, 2, 1},
                                                           {2, 3, 2, 1},
                                                           {4, 7, 2, 1}}};

int find_geometry(const ops::Conv2dGeometry& g) {
  for (size_t i = 0; i < kGeometries.size(); ++i) {
    const CompiledGeometry& s = kGeometries[i];
    if (g.out_h == s.out && g.out_w == s.out && g.h == s.in && g.w == s.in &&
        g.stride_h == s.stride && g.stride_w == s.stride && g.pad_top == s.pad &&
        g.pad_left == s.pad) {
      return static_cast<int>(i);
    }
  }
  return -1;
}

struct Args {
  const float* xt;      // x transposed: [n][c_in][h * w]
  const float* packed;  // [c_out / 16][c_in][9][16]
  const float* bias;    // [c_out] or null
  const float* residual;
  float* y;
  int64_t n, c_in, c_out;
  bool relu;
};

// One image's out x out pixels for output channels [16 b, 16 b + 16).
template <int kOut, int kIn, int kStride, int kPad>
__attribute__((target("arch=x86-64-v4"))) inline void image_block(const Args& a, int64_t image,
                                                                  int64_t b) {
  constexpr int kPixels = kOut * kOut;
  __m512 acc[kPixels];
  for (int p = 0; p < kPixels; ++p) acc[p] = _mm512_setzero_ps();
  const float* x = a.xt + image * a.c_in * kIn * kIn;
  const float* w = a.packed + b * a.c_in * kTaps * kBlock;
  for (int64_t ic = 0; ic < a.c_in; ++ic, x += kIn * kIn, w += kTaps * kBlock) {
#pragma GCC unroll 9
    for (int t = 0; t < kTaps; ++t) {
      const __m512 wv = _mm512_loadu_ps(w + t * kBlock);
#pragma GCC unroll 16
      for (int p = 0; p < kPixels; ++p) {
        const int ih = (p / kOut) * kStride + t / 3 - kPad,
                  iw = (p % kOut) * kStride + t % 3 - kPad;
        if (ih < 0 || ih >= kIn || iw < 0 || iw >= kIn) continue;  // known when compiled
        acc[p] = _mm512_fmadd_ps(wv, _mm512_set1_ps(x[ih * kIn + iw]), acc[p]);
      }
    }
  }
  const int64_t c0 = b * kBlock;
  const __m512 zero = _mm512_setzero_ps();
  for (int p = 0; p < kPixels; ++p) {
    const int64_t at = (image * kPixels + p) * a.c_out + c0;
    __m512 v = acc[p];
    if (a.bias) v = _mm512_add_ps(v, _mm512_loadu_ps(a.bias + c0));
    if (a.residual) v = _mm512_add_ps(v, _mm512_loadu_ps(a.residual + at));
    if (a.relu) v = _mm512_mask_mov_ps(v, _mm512_cmp_ps_mask(v, zero, _CMP_LT_OQ), zero);
    _mm512_storeu_ps(a.y + at, v);
  }
}

// Every block of output channels of every image, the blocks spread over the threads (each
// thread streams its own part of the filter; a block's part is read from the L2 again for the
// batch's other images).
template <int kOut, int kIn, int kStride, int kPad>
__attribute__((target("arch=x86-64-v4"))) void run_blocks(const Args& a, bool parallel) {
  const int64_t blocks = a.c_out / kBlock;
#pragma omp parallel for schedule(static) if (parallel)
  for (int64_t b = 0; b < blocks; ++b) {
    for (int64_t image = 0; image < a.n; ++image) {
      image_block<kOut, kIn, kStride, kPad>(a, image, b);
    }
  }
}

using RunFn = void (*)(const Args&, bool);

template <size_t... I>
constexpr std::array<RunFn, sizeof...(I)> run_table(std::index_sequence<I...>) {
  return {&run_blocks<kGeometries[I].out, kGeometries[I].in, kGeometries[I].stride,
                      kGeometries[I].pad>...};
}

constexpr std::array<RunFn, kGeometries.size()> kRun =
    run_table(std::make_index_sequence<kGeometries.size()>());

// "" if the kernel takes the signature (see the file comment); `geometry` is its kGeometries
// index.
std::string decline(const kernels::KernelSignature& sig, int* geometry) {
  for (const TensorType& t : sig.inputs) {
    if (t.dtype != DType::kF32) return "f32 only";
  }
  if (!sig.input_is_constant(1)) return "the filter is not constant";
  const ops::Attrs& attrs = *sig.attrs;
  if (attrs.has("pool") && attrs.get_string("pool") != "none") return "a pooling";
  if (attrs.has("activation")) {
    const std::string& act = attrs.get_string("activation");
    if (act != "none" && act != "relu") return "activation " + act + " (none or relu only)";
  }
  const ops::Conv2dGeometry g =
      ops::conv2d_geometry(sig.inputs[0].shape, sig.inputs[1].shape, attrs);
  if (g.kh != 3 || g.kw != 3 || g.dil_h != 1 || g.dil_w != 1 || g.groups != 1) {
    return "not an undilated ungrouped 3x3 filter";
  }
  if (g.c_out % kBlock != 0) return "output channels not a multiple of 16";
  if (g.n == 0 || g.c_in == 0 || g.c_out == 0) return "empty";
  if (g.n * g.out_h * g.out_w > kMaxPixels) return "more than 64 output pixels";
  *geometry = find_geometry(g);
  if (*geometry < 0) return "an image size, stride or padding it is not compiled for";
  return "";
}

class ConvSmallImageKernel final : public kernels::Kernel {
 public:
  ConvSmallImageKernel(const kernels::KernelSignature& sig, int geometry)
      : geometry_(geometry),
        g_(ops::conv2d_geometry(sig.inputs[0].shape, sig.inputs[1].shape, *sig.attrs)),
        ep_(sig.op->name == "fused_conv2d" ? onednn::fused_epilogue(*sig.attrs)
                                           : onednn::Epilogue{}),
        packed_(static_cast<size_t>(g_.c_out * g_.c_in * kTaps) * sizeof(float)),
        xt_(static_cast<size_t>(g_.n * g_.c_in * g_.h * g_.w)) {}

  void run(kernels::KernelContext& ctx) override {
    const float* filter = ctx.inputs[1].data<float>();
    if (filter != packed_from_) pack(filter);
    const float* x = ctx.inputs[0].data<float>();
    const int64_t pixels = g_.h * g_.w;
    for (int64_t image = 0; image < g_.n; ++image) {
      transpose_f32(pixels, g_.c_in, x + image * pixels * g_.c_in, g_.c_in,
                    xt_.data() + image * pixels * g_.c_in, pixels);
    }
    Args a{xt_.data(),
           static_cast<const float*>(packed_.data()),
           ep_.bias_input >= 0 ? ctx.inputs[ep_.bias_input].data<float>() : nullptr,
           ep_.residual_input >= 0 ? ctx.inputs[ep_.residual_input].data<float>() : nullptr,
           ctx.outputs[0].data<float>(),
           g_.n,
           g_.c_in,
           g_.c_out,
           ep_.activation == ops::Activation::kRelu};
    // One thread below 1024 input x output channel pairs: at 4x4, batch 1, two threads took 16 ->
    // 32 channels in 0.74-0.85 us against one's 0.71-0.72, 32 -> 32 in 0.96-0.99 against 1.13,
    // 64 -> 64 in 2.2-2.4 against 3.4.
    const bool parallel = g_.c_out > kBlock && g_.c_out * g_.c_in >= 1024 && !omp_in_parallel();
    kRun[static_cast<size_t>(geometry_)](a, parallel);
  }

 private:
  // HWIO [3][3][c_in][c_out] -> [c_out / 16][c_in][9][16].
  void pack(const float* filter) {
    float* out = static_cast<float*>(packed_.data());
    const int64_t blocks = g_.c_out / kBlock;
    for (int64_t b = 0; b < blocks; ++b) {
      for (int64_t ic = 0; ic < g_.c_in; ++ic) {
        for (int64_t t = 0; t < kTaps; ++t) {
          const float* src = filter + (t * g_.c_in + ic) * g_.c_out + b * kBlock;
          std::copy(src, src + kBlock, out + ((b * g_.c_in + ic) * kTaps + t) * kBlock);
        }
      }
    }
    packed_from_ = filter;
  }

  int geometry_;
  ops::Conv2dGeometry g_;
  onednn::Epilogue ep_;
  onednn::AlignedBuffer packed_;
  const float* packed_from_ = nullptr;
  std::vector<float> xt_;
};

void add_candidate(kernels::KernelRegistry& r, std::string_view op) {
  kernels::KernelCandidate c;
  c.name = "cpu_small_image";
  c.dtypes = {DType::kF32};
  c.priority = kOneDnnPriority + 5;  // ahead of oneDNN's convolution where it applies
  c.decline = [](const kernels::KernelSignature& sig) {
    int geometry = -1;
    return decline(sig, &geometry);
  };
  c.create = [](const kernels::KernelSignature& sig) -> std::unique_ptr<kernels::Kernel> {
    int geometry = -1;
    std::string why = decline(sig, &geometry);
    if (!why.empty())
      throw_error(ErrorCode::kInternal, "cpu_small_image ", sig.to_string(), ": ", why);
    return std::make_unique<ConvSmallImageKernel>(sig, geometry);
  };
  r.add(op, std::move(c));
}

}  // namespace

void register_conv_small_image_kernels(kernels::KernelRegistry& r) {
  if (!cpu_runs_v4_variants()) return;  // AVX-512 kernels: none to offer
  add_candidate(r, "conv2d");
  add_candidate(r, "fused_conv2d");
}

}  // namespace tern::cpu

TERN_CPU_V3_END
