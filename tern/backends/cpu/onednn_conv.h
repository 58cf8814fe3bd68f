// oneDNN convolution descriptors shared by the forward (conv2d, fused_conv2d) and backward
// (conv2d_backprop_input, conv2d_backprop_filter) kernels: NHWC activations, HWIO filters (as
// oneDNN [G,] O, I, KH, KW dims with strides), geometry from tern/ops/conv_geometry.h.
// Primitives ask for weights in `any` layout (oneDNN's blocked kernels are several times faster
// than its plain-weight gemm path); WeightsReorder moves filters between the two layouts.
#pragma once

#include "tern/backends/cpu/onednn_common.h"
#include "tern/ops/conv_geometry.h"

#include <functional>
#include <optional>
#include <vector>

namespace tern::cpu::onednn {

struct ConvDescs {
  ops::Conv2dGeometry geo;
  dnnl::memory::desc src, dst;          // nhwc: the user's activations
  dnnl::memory::desc src_any, dst_any;  // `any`: what Winograd primitives are created with
  // convolution_direct, or convolution_winograd (choose_conv_algorithm): then the primitive
  // keeps src/dst in a blocked layout and ActivationReorder moves them from/to nhwc.
  dnnl::algorithm alg = dnnl::algorithm::convolution_direct;
  dnnl::memory::desc weights;  // the user's HWIO filter
  dnnl::memory::desc weights_any;
  dnnl::memory::desc bias;  // [c_out] when requested, else empty
  dnnl_dims strides, dilates, pad_l, pad_r;
};

ConvDescs conv_descs(const ops::Conv2dGeometry& geo, DType dtype, bool with_bias);

// Forward primitive desc for training-time use (also the hint for the backward primitives).
dnnl::convolution_forward::primitive_desc conv_forward_pd(const ConvDescs& d,
                                                          const dnnl::post_ops& ops = {});

// The src/dst descriptors a primitive is created with: nhwc (direct) or `any` (Winograd).
const dnnl::memory::desc& primitive_src(const ConvDescs& d);
const dnnl::memory::desc& primitive_dst(const ConvDescs& d);

// Sets d.alg to Winograd (oneDNN's F(4x4, 3x3)) for f32 3x3 stride-1 undilated ungrouped
// convolutions whose channel counts are multiples of 16, when `build(d)` (which creates the
// kernel's primitive descriptor and returns its scratchpad bytes) succeeds with it and needs at
// most kWinogradScratchpadLimit of scratchpad (its transformed tiles and weights: up to 126 MB
// for ResNet-18's 512-channel layers, where the peak memory would grow more than the step
// shrinks); otherwise leaves it direct. On this CPU Winograd is 2.1-2.4x faster than direct on
// ResNet-18's 3x3 layers in all three directions (forward 64 channels at 32x32, batch 32:
// 10.5 -> 4.6 ms, ~6.4 ms with the nhwc reorders). Also direct below kWinogradMinOutputPixels
// output pixels (batch x height x width): there the tile transforms and the blocked-layout
// reorders cost more than the multiplications saved (served ResNet-18 at batch 1, 32x32 = 1024
// pixels per layer at most, filters kept: 6.2-6.6 ms per call with Winograd, 3.6-3.7 ms direct;
// the W3 CNN at batch 1: 78 vs 48 us; W4's 8x8 layers at batch 32 = 2048 pixels: Winograd
// 4.0-4.7 ms vs direct 5.9-6.0 ms). TERN_ONEDNN_WINOGRAD=0 keeps every convolution direct.
constexpr size_t kWinogradScratchpadLimit = size_t{32} << 20;
constexpr int64_t kWinogradMinOutputPixels = 2048;
void choose_conv_algorithm(ConvDescs& d, const std::function<size_t(const ConvDescs&)>& build);

// The input gradient of the stride-1 ungrouped convolution `g` as a forward convolution: of dy
// with the filter flipped in H and W and its O and I swapped, paddings (k - 1) d - pad (nullopt
// where one would be negative, or for other convolutions).
std::optional<ops::Conv2dGeometry> flipped_forward_geometry(const ops::Conv2dGeometry& g);

// conv2d_backprop_input of the convolution `g` in `dtype` as a forward convolution (of dy with
// the filter flipped in H and W, O and I swapped; onednn_conv_backward.cc says where and why):
// its descriptors, or nullopt where oneDNN's backward-data convolution runs instead.
std::optional<ConvDescs> input_gradient_forward_descs(const ops::Conv2dGeometry& g, DType dtype);

// Common reasons to decline a conv signature: dtypes, empty tensors.
std::string conv_decline_common(const kernels::KernelSignature& sig);

// Whether the conv kernels' own loops (im2col, col2im, the Winograd transforms) spread work of
// `bytes` over threads: from 64 KiB, and not inside another parallel region.
bool conv_loop_parallel(int64_t bytes);

// Convolutions over small images as GEMMs on oneDNN's matmul (onednn_conv_gemm.cc). oneDNN
// 2.6.3's direct convolutions run images of 4x4 and less far below their rate on larger ones;
// the same work as one GEMM (`kernel_ab_bench`, batch 32, bf16): ResNet-18's 3x3 512-channel
// layer at 4x4 3.53 ms as a convolution, 1.54 ms as the [512, 4608] x [4608, 512] matmul; at
// 2x2 (ResNet-50 at 64x64) 2.94 vs 0.43 ms; 256 channels at 4x4 0.42 vs 0.29 ms; f32 512 at 4x4
// 9.9 vs 6.2 ms. From 7x7 up the convolution is as fast or faster (512 at 7x7: 4.5 vs 5.0 ms,
// 128 at 8x8: 0.22 vs 0.25 ms), hence kConvGemmMaxPixels output pixels per image.
// TERN_CONV_GEMM=0 keeps every convolution on oneDNN's convolution primitives.
constexpr int64_t kConvGemmMaxPixels = 16;
constexpr int64_t kConvGemmMaxBytes = int64_t{32} << 20;  // patches / f32 columns
bool conv_gemm_applies(const ops::Conv2dGeometry& g, DType dtype);
// The input gradient as a GEMM: a GEMM also multiplies the taps that fall in the padding, which
// oneDNN's f32 backward-data convolution skips; it is the faster in f32 only at 2x2 (ResNet-18's
// 512 channels, batch 32: 2.57 -> 1.63 ms; at 4x4 6.0 vs 6.0 ms, 256 channels 1.29 vs 1.57 ms).
// bf16 up to kConvGemmMaxPixels (AMX: 512 channels at 4x4 3.40 -> 1.30 ms), and f32 layers of
// stride > 1 too, whose backward-data convolution is slower still: ResNet-18's 3x3 stride-2
// 256 -> 512 layer (8x8 -> 4x4, batch 32) 3.32-3.41 -> 2.57-2.70 ms in the W4 step
// (`workloads_bench
// --profile`, 4 interleaved rounds), its 1x1 stride-2 shortcut 0.33-0.37 -> 0.31-0.33; at 8x8
// and 16x16 outputs (the stage-3 and stage-4 layers) the GEMM was even or slower.
constexpr int64_t kF32InputGradientGemmMaxPixels = 4;
bool input_gradient_gemm_applies(const ops::Conv2dGeometry& g, DType dtype);

// The filter gradient as one GEMM over the im2col patches, for layers with few output pixels:
// dW = patches^T dy, with dy [n out_h out_w, c_out] read in place (NHWC is row-major in that
// shape), is the HWIO filter gradient. oneDNN 2.6's backward-weights convolution on this CPU (its
// older jit AMX kernel) runs such layers at a third of its forward rate: ResNet-18's 3x3
// 512-channel layer at 4x4, batch 32, bf16 takes 10.8 ms against 3.6 ms forward. Used up to
// kFilterGradientGemmMaxRows output pixels with patches of at most kFilterGradientGemmMaxBytes;
// TERN_FILTER_GRADIENT_GEMM=0 keeps every filter gradient on oneDNN's convolution.
constexpr int64_t kFilterGradientGemmMaxRows = 2048;
constexpr int64_t kFilterGradientGemmMaxBytes = int64_t{16} << 20;
bool filter_gradient_gemm_applies(const ops::Conv2dGeometry& g, DType x_dtype);

class FilterGradientGemm {
 public:
  FilterGradientGemm(const ops::Conv2dGeometry& g, DType x_dtype, DType dw_dtype);
  void run(const void* x, const void* dy, void* dw);

 private:
  ops::Conv2dGeometry g_;
  size_t esize_ = 0, patch_bytes_ = 0;
  DType dw_dtype_;
  bool native_bf16_ = false;  // weight_grad_bf16's tiles instead of oneDNN's matmul
  PrimitiveRunner runner_;
};

// bf16 filter gradients of at least kNativeFilterGradientMinRows output pixels run as GEMMs
// multiply on weight_grad_bf16 (weight_grad_bf16.h, the matmul kernel cpu_weight_grad_bf16's
// product) where bf16 products are native (bf16_products_native(), small_gemm.h), and 1x1
// stride-1 layers then run so at any size: x is their patches (no copy), where oneDNN's
// backward-weights convolution took those of more than kFilterGradientGemmMaxRows pixels. Zen 5,
// 2 threads, operands cold (`kernel_ab_bench`, 8 or 16 independent products in one graph):
// ResNet-50's 1x1 layers at 8x8, batch 32 ([2048, 512]^T [2048, 128]) 0.43 -> 0.36 ms per
// product; at 16x16 ([8192, 256]^T [8192, 64]) 0.46 -> 0.40 ms. In the W9 step (`workloads_bench
// --workload w9 --profile`, one interleaved pair on a quiet host) the filter gradients 25.9 ->
// 25.0 ms. Below 1024 pixels (ResNet-50's 4x4 and 2x2 stages: 512 and 128 rows) oneDNN's matmul
// kept them: the pairing of few rows cost more (its 2x2 layers 0.29-0.67 -> 0.30-0.79 ms).
constexpr int64_t kNativeFilterGradientMinRows = 1024;

// The im2col patches of x (nhwc) for `g`: row (n, oh, ow) holds, tap by tap in HWIO order, the
// c_in values under the tap (zeros in the padding): [n out_h out_w, kh kw c_in].
void im2col(const ops::Conv2dGeometry& g, size_t esize, const void* x, void* patches);

// The forward convolution as im2col patches x the HWIO filter [kh kw c_in, c_out], bias and the
// epilogue's post-ops (sum for a residual already in `out`, activation) on the matmul. For
// filters that change every run (training): a constant filter (a served model) stays with the
// convolution primitive, which keeps it in its own layout (served ResNet-18, batch 1: 3.30-3.35
// ms per call that way, 3.35-3.37 ms as GEMMs with the filter packed once; batch 256: 350-352
// vs 344-350 rows/s).
class ConvForwardGemm {
 public:
  ConvForwardGemm(const ops::Conv2dGeometry& g, DType dtype, const Epilogue& ep);
  void run(const void* x, const void* filter, const void* bias, void* out);

 private:
  ops::Conv2dGeometry g_;
  size_t esize_ = 0, patch_bytes_ = 0;
  PrimitiveRunner runner_;
};

// conv2d_backprop_input as dy [n out_h out_w, c_out] x filter^T (f32 columns), then col2im sums
// the columns into dx (f32, rounded once into a bf16 dx).
class InputGradientGemm {
 public:
  InputGradientGemm(const ops::Conv2dGeometry& g, DType dtype);
  void run(const void* dy, const void* filter, void* dx);

 private:
  void col2im(const float* cols, float* dx) const;
  void scatter(const void* product, void* dx) const;

  ops::Conv2dGeometry g_;
  DType dtype_;
  bool direct_ = false;   // a 1x1 stride-1 layer: the product written straight into dx
  bool scatter_ = false;  // a 1x1 layer of stride > 1 without padding: its rows copied to dx
  size_t cols_bytes_ = 0;
  int64_t dx_elements_ = 0;
  PrimitiveRunner runner_;
  Reorder to_dx_;  // f32 -> dx's dtype, when not f32
};

// Convolutions over small images whose windows reach into the padding, as GEMMs over the taps
// inside the image only (onednn_conv_valid_taps.cc): the output pixels grouped by the rectangle
// of taps their window keeps, each class's patches holding just those taps, one GEMM per class
// and row of taps against the HWIO filter's rows read in place (the filter gradient: one GEMM
// per tap over the pixels that read it). im2col and Winograd multiply
// the padding's zeros too: a 3x3 SAME layer at 2x2 has 4 of 9 taps inside the image, at 4x4
// 100 of 144. All three directions, f32 and bf16; where at most kValidTapsShareNumerator /
// kValidTapsShareDenominator of the taps are inside, at most kConvGemmMaxPixels output pixels
// (larger images keep few taps in the padding), after tern's Winograd (which wins at 4x4:
// ResNet-18's 512 channels, batch 32, bf16, 1.66-1.76 ms forward against 2.20-2.25 here).
// ResNet-50's 3x3 512-channel layers at 2x2, batch 32, bf16 (`kernel_ab_bench`, 6 independent
// nodes so the operands come from memory, 2 rounds; ms per node, im2col GEMM -> these): forward
// 0.92-0.93 -> 0.76-0.79, input gradient 0.84-0.89 -> 0.78-0.79, filter gradient 0.66-0.68 ->
// 0.43-0.47; in W9's step (`workloads_bench --workload w9 --profile`, 3 interleaved rounds) its
// three layers' nine nodes 7.02 / 8.67 / 8.46 -> 5.78 / 8.50 / 7.83 ms, the whole step within
// the host's noise. TERN_CONV_VALID_TAPS=0 turns it off.
constexpr int64_t kValidTapsShareNumerator = 3, kValidTapsShareDenominator = 4;
// The taps inside the image, summed over one image's output pixels.
int64_t valid_taps_useful(const ops::Conv2dGeometry& g);
bool valid_taps_apply(const ops::Conv2dGeometry& g, DType dtype);

class ValidTapsConv {
 public:
  enum class Direction { kForward, kInputGradient, kFilterGradient };
  // ep: the forward's bias and residual (its activation is the kernel's finish_epilogue);
  // dw_dtype: the filter gradient's (f32, or the inputs' dtype), summed in f32.
  ValidTapsConv(const ops::Conv2dGeometry& g, DType dtype, Direction direction,
                const Epilogue& ep = {}, DType dw_dtype = DType::kF32);
  // y += the residual it holds, with ep.residual_input >= 0.
  void forward(const void* x, const void* filter, const void* bias, void* y);
  void input_gradient(const void* dy, const void* filter, void* dx);
  void filter_gradient(const void* x, const void* dy, void* dw);

 private:
  struct Class {
    int64_t i0, i1, j0, j1;       // the valid taps: rows [i0, i1), columns [j0, j1)
    std::vector<int64_t> pixels;  // output pixels oh * out_w + ow
    int64_t rows = 0, width = 0;  // n * pixels, taps * c_in
    // Where its patches start (blocks [rows, taps of the row * c_in] per row of taps, one after
    // another) and its first row in the class-ordered rows of y or dy.
    int64_t patch_at = 0, row_at = 0;
  };
  struct Tap {  // the filter gradient's: a tap and the output pixels that read it
    int64_t t;
    std::vector<int64_t> pixels;
    int64_t rows = 0, row_at = 0;  // n * pixels; its first row in the gathered x and dy
  };
  struct Gemm {
    PrimitiveRunner runner;
    int64_t a_at = 0, b_at = 0, c_at = 0;  // element offsets into the operands
  };
  void run_gemms(const void* a, size_t a_esize, const void* b, size_t b_esize, void* c);
  void gather_patches(const void* x, void* patches) const;
  void gather_rows(const void* dy, void* rows) const;
  template <typename T>
  void write_output(const float* acc, const void* bias, void* y) const;
  void col2im(const float* cols, float* dx) const;

  ops::Conv2dGeometry g_;
  DType dtype_;
  Direction direction_;
  Epilogue ep_;
  DType dw_dtype_;
  Reorder round_;  // f32 sums -> a bf16 dx or dw
  std::vector<Class> classes_;
  std::vector<Gemm> gemms_;
  std::vector<Tap> taps_;
  std::vector<int64_t> unwritten_taps_;  // filter gradient: taps no pixel reads (zeros)
  int64_t patch_elements_ = 0, rows_ = 0, tap_rows_ = 0;
};

// Winograd convolutions of tern's own (onednn_conv_winograd.cc), F(2x2, 3x3) and F(4x4, 3x3):
// tile transforms on NHWC tensors around batched GEMMs on oneDNN's matmul (one per position of
// the transformed tile), 2.25x or 4x fewer multiplications than a direct convolution, for f32 3x3
// stride-1 layers. They take the layers oneDNN's own Winograd does not (images too small for its
// tiles, or past kWinogradScratchpadLimit), such as ResNet-18's 512-channel layers at 4x4
// (batch 32: forward ~8.1 ms as an im2col GEMM, filter gradient ~9.9, input gradient ~7.2 ms on
// oneDNN; as F(2x2, 3x3) 4.9 / 5.1 / 4.9-5.4 ms, its 16 GEMMs of [128, 512] x [512, 512] ~3.7),
// and the kernels prefer them to oneDNN's Winograd where both apply: no nhwc <-> blocked
// reorders (batch 32, `kernel_ab_bench`: 64 channels at 32x32 forward 4.7 -> 3.7 ms, input
// gradient 4.6 -> 3.7, filter gradient even; 128 at 16x16 3.6-3.9 -> 2.9-3.1, 4.2 -> 3.0,
// 3.7 -> 3.0-3.1; 256 at 8x8 3.9-4.0 -> 2.7, filter gradient even, 4.2 -> 2.9).
// winograd_tile() gives the tile (2 or 4; 0: none) for a layer of kWinogradMinChannels input
// and output channels or more and at least kWinogradMinTiles 2x2 tiles (batch x tiles per
// image): 4 from kWinogradF4MinSize output pixels a side, while one chunk's transformed tiles
// and the transformed filter stay within kWinogradMaxBytes each. (F(4x4, 3x3) on 4x4 outputs, one
// tile per image, ran ResNet-18's 512-channel layer at batch 32 slower forward, 5.8 vs 5.2 ms, and
// its filter gradient faster alone, 4.1 vs 5.7 ms, but not in the W4 step, 5.6-6.6 vs 5.2-5.7 ms:
// its transformed filter gradient is 38 MB.) With fewer channels the transforms' memory traffic
// outweighs the multiplications saved: the W3 CNN's input gradient, 64 -> 32 channels at 13x13,
// batch 128, took 3.6 ms as F(2x2, 3x3) against 2.0 ms direct. With fewer tiles a layer streams its
// filter more than it computes: served ResNet-18 at batch 1 runs its 8x8 256-channel layers (16
// tiles) in 0.19-0.20 ms against 0.24 direct, but its 4x4 512-channel ones (4 tiles) stay direct
// (the transformed filter is 16/9 of the filter's bytes). A filter kept transformed (constant:
// a served model) is read whole at every call, 36/9 of its bytes for F(4x4, 3x3) against 16/9 for
// F(2x2, 3x3): below kWinogradF4MinTilesKept F(4x4) tiles (batch x tiles per image) `kept_filter`
// takes F(2x2, 3x3). Served ResNet-18 at batch 1 (`workloads_bench --workload i-resnet18
// --profile`, 2 threads): 256 channels at 8x8 (4 tiles) 0.19 -> 0.13 ms per layer (direct 0.17),
// 128 at 16x16 (16 tiles) 0.10-0.11 -> 0.094; 64 at 32x32 (64 tiles) stays F(4x4): 0.08 against
// 0.10-0.12. TERN_CONV_WINOGRAD=0 keeps every convolution on oneDNN's kernels, =2 or =4 forces
// that tile wherever one applies.
// Where F(4x4, 3x3) runs fused (winograd_fused: AVX-512 CPUs, a transformed filter that fits L2;
// training, not a kept filter) it takes layers from kWinogradFusedMinChannels channels: its
// transforms no longer cross memory. The W3 CNN's 32 -> 64 layer (11x11 outputs, batch 128;
// oneDNN's Winograd forward, direct gradients before; `step_profile_bench`, 3 interleaved
// rounds): input gradient 1.36-1.42 -> 1.04-1.19 ms, filter gradient 0.92-1.09 -> 0.68-0.80,
// forward 0.87-0.92 -> 0.58-0.89; the step 5.03 / 6.25 / 5.76 -> 4.42 / 4.97 / 5.31 ms.
constexpr int64_t kWinogradMinTiles = 16;
constexpr int64_t kWinogradMinChannels = 64;
constexpr int64_t kWinogradFusedMinChannels = 32;
constexpr int64_t kWinogradF4MinSize = 8;
constexpr int64_t kWinogradF4MinTilesKept = 64;
constexpr int64_t kWinogradMaxBytes = int64_t{64} << 20;
int winograd_tile(const ops::Conv2dGeometry& g, DType dtype, bool kept_filter = false);
// The tile for a bf16 forward convolution or filter gradient run by tern's Winograd on its bf16
// tensors, on AMD CPUs running bf16 contractions natively (bf16_native_on_amd; else 0):
// - 4 (F(4x4, 3x3), the tensors widened as the transforms read them, f32 transforms and
//   products, the output rounded once) where f32 takes 4x4 tiles and the layer runs fused
//   (winograd_fused) or has fewer than kWinogradBf16MinChannels channels (input or output);
// - else 2 (F(2x2, 3x3) with bf16 products: winograd_products) where f32 Winograd applies at all,
//   with at least kWinogradBf16MinTiles 2x2 tiles (batch x tiles per image);
// - else 4 where f32 takes 4, else 0 (oneDNN's bf16 kernels).
// F(4x4, 3x3) against oneDNN's bf16 kernels (Zen 5, 2 threads, batch 32, `kernel_ab_bench`,
// interleaved): forward 64 channels at 32x32 2.41 -> 2.02 ms, 128 at 16x16 2.19 -> 1.63; filter
// gradient (f32 result) 64 at 32x32 3.17 -> 2.12, 128 at 16x16 2.68 -> 1.69.
// F(2x2, 3x3) with bf16 products multiplies the transforms rounded to bf16 on oneDNN's bf16 GEMM
// (vdpbf16ps, twice the f32 rate): 2.25x fewer multiplications at twice the rate. Its transforms
// only add and halve (coefficients 1 and 1/2), so each product is within 2^-8 of the f32 one and
// the results within ~0.3-0.7% of the largest magnitude of the f32 run's (the F(4x4, 3x3) results,
// only rounded once: 0.2-0.4%); F(4x4, 3x3)'s coefficients (up to 8, and 1/24) would magnify bf16
// rounding ten times more, so it keeps f32 products. Batch 32 (interleaved, against what ran
// before: oneDNN's bf16 kernels, or F(4x4, 3x3)): 512 channels at 4x4 forward 2.6-2.7 ->
// 1.7-2.2 ms, input gradient 3.0-3.1 -> 1.7-1.8, filter gradient 3.0-3.1 -> 1.7-1.8; 256 at 8x8
// 2.08 -> 1.54-1.71, 2.37 -> 1.47-1.55, 2.25-2.38 -> 1.82-1.86; batch 16, 512 at 4x4 (64 tiles)
// 1.38 -> 1.08-1.12, 1.27 -> 1.02-1.13, 1.33-1.35 -> 1.03-1.05. Where it loses: 128 channels at
// 16x16 (forward 1.87-1.95 -> 2.10-2.17, filter gradient 1.59-1.94 -> 2.46-2.49 against
// F(4x4, 3x3), whence kWinogradBf16MinChannels), and 32 tiles (ResNet-50's 512 channels at 2x2:
// even alone, 0.7 -> 1.15 ms filter gradient and 0.78 -> 1.5 input gradient in the W9 step: the
// transformed filter's 8 MB outweigh the tiles' products, whence kWinogradBf16MinTiles).
// W5 step 114-118 -> 101-102 ms, W9 99-100 -> 94-97 ms (3 interleaved rounds each,
// TERN_WINOGRAD_BF16_PRODUCTS=0 against on). TERN_WINOGRAD_BF16_PRODUCTS=0 keeps those layers
// on oneDNN's kernels or F(4x4, 3x3) (exact products).
// A rule by shape and CPU, as every bf16 form choice: each rank of a job takes the same one.
constexpr int64_t kWinogradBf16MinTiles = 64;
constexpr int64_t kWinogradBf16MinChannels = 256;
int winograd_tile_bf16(const ops::Conv2dGeometry& g, bool kept_filter = false);
// The dtype of the transformed tiles and filter that the GEMMs multiply: bf16 for bf16 tensors
// with F(2x2, 3x3), else f32.
inline DType winograd_products(int m, DType dtype) {
  return m == 2 && dtype == DType::kBF16 ? DType::kBF16 : DType::kF32;
}
// The tile for a bf16 input gradient run as tern's Winograd (the forward of the flipped filter,
// `fg` = flipped_forward_geometry): 4 where F(4x4, 3x3) runs fused (winograd_fused, AVX-512;
// 64 channels at 32x32, batch 32, 2.71-2.76 -> 2.28-2.32 ms against oneDNN, W5's four such nodes
// 10.1-10.4 -> 8.1-8.2 ms per step), else 2 where winograd_tile_bf16's F(2x2, 3x3) conditions
// hold (from 128 channels at 16x16: 2.2-2.3 -> 1.72 ms; 128 at 8x8 0.56-0.57 -> 0.44), else 0:
// oneDNN's kernels (F(4x4, 3x3) in chunks of images ran as fast as them: W5 34.7-35.5 against
// 35.2-35.8 ms per step).
int winograd_input_gradient_tile_bf16(const ops::Conv2dGeometry& fg);
// Whether bf16 matmuls and convolutions run on oneDNN's bf16 kernels because the CPU is AMD's
// with AVX512_BF16 (not from TERN_BF16_CONTRACTIONS; onednn_widen.cc).
bool bf16_native_on_amd();
// Both directions run in chunks of images whose transformed tiles (input or output) take at most
// kWinogradChunkBytes each: the GEMM's operands stay in cache and a large batch needs no large
// buffers (W4's 64-channel 32x32 layers: 6 chunks of 6 images). 8 MB chunks (the first size:
// W4 239-253 -> 232-254 ms, peak RSS 383 -> 363 MB against whole batches) -> 4 MB on Zen 5 (32 MB
// L3, 1 MB L2 per core; session 23): W4's convolutions 146.8 / 150.0 -> 144.1 / 144.2 ms per step
// (`workloads_bench --profile`, 2 interleaved rounds); alone, batch 32, 64 channels at 32x32
// forward 2.76 -> 2.63 ms, filter gradient 3.74 -> 3.14; 128 at 16x16 2.21 -> 1.98, 2.49 -> 2.24.
// 2 MB chunks were as fast alone and slower in the step.
constexpr int64_t kWinogradChunkBytes = int64_t{4} << 20;
int64_t winograd_chunk_images(const ops::Conv2dGeometry& g, int m);
// Whether the forward runs fused per block of kFusedTiles tiles (WinogradForward, AVX-512 CPUs):
// F(4x4, 3x3) with a transformed filter of at most kFusedFilterBytes, which stays in a core's L2
// with the block's tiles (64 x 64 channels: 576 KB). TERN_WINOGRAD_FUSED=0 turns it off.
constexpr int64_t kFusedTiles = 18;
constexpr int64_t kFusedFilterBytes = int64_t{640} << 10;
bool winograd_fused(const ops::Conv2dGeometry& g, int m);
// Whether F(4x4, 3x3) runs per block of kColumnBlock output channels (WinogradForward,
// WinogradFilterGradient; AVX-512 CPUs, f32, a filter that changes every run): for layers whose
// transformed filter is too large for winograd_fused but whose transformed tiles, all at once,
// take at most kWinogradColumnsMaxBytes (few tiles, many channels: ResNet-18's 512-channel layers
// at 4x4, one tile per image). Each block's transformed filter is made by the thread that
// multiplies by it and stays in its cache, where the whole transform (36/9 of the filter's bytes,
// 38 MB for 512 x 512 channels) would be written to memory and read back; F(2x2, 3x3), which these
// layers took before, multiplies 16/9 as much. From kWinogradF4ColumnsMinSize output pixels a side
// (F(4x4, 3x3) on 2x2 outputs would multiply 9/4 as much as F(2x2, 3x3)).
// TERN_WINOGRAD_COLUMNS=0 turns it off.
constexpr int64_t kColumnBlock = 64;
constexpr int64_t kWinogradColumnsMaxBytes = int64_t{4} << 20;
constexpr int64_t kWinogradF4ColumnsMinSize = 4;
bool winograd_columns(const ops::Conv2dGeometry& g);

// A convolution's output under a 2x2 max pooling at stride 2 without padding whose windows lie
// inside it (PooledConvGeometry, pool_2x2_stride_2): tern's fused Winograd writes the pooled
// values and their argmax (window positions 0-3, the first maximum as max_pool2d_argmax keeps it)
// straight from each output tile, and its gradients expand each dy tile from the pooled dy and
// argmax as they read it, so the convolution-sized tensors are never stored. An m x m tile (m
// even) holds (m / 2)^2 whole windows.
struct PooledOutput {
  ops::Pool2dGeometry pool;  // over the convolution's output
  float* y;                  // [pool.output_shape()]
  uint8_t* argmax;           // the same shape
};
struct PooledGradient {
  ops::Pool2dGeometry pool;
  const float* dy;  // [pool.output_shape()]
  const uint8_t* argmax;
};

// The forward convolution `g` as Winograd with m x m output tiles, with the epilogue's bias,
// residual (which `out` holds before the run) and relu (keeping NaN) in the output transform; no
// other activation. `flipped`: `g` is the forward form of an input gradient (dy convolved with
// the filter flipped in H and W, O and I swapped) and run() takes the original HWIO filter
// [3, 3, g.c_out, g.c_in]. `dtype`: of every tensor run() takes, f32 or bf16 (read widened, the
// output rounded once; the transforms run in f32, the GEMMs on winograd_products' dtype).
class WinogradForward {
 public:
  // kept_filter: run() will be given a constant filter (a served model), whose transform the
  // chunks keep; otherwise layers that winograd_columns takes run per block of channels.
  WinogradForward(const ops::Conv2dGeometry& g, int m, bool flipped, const Epilogue& ep,
                  DType dtype = DType::kF32, bool kept_filter = false);
  // constant_filter: the filter's transform is kept for the next runs (made again only if
  // `filter` is another buffer). bias: [g.c_out], or null for none.
  void run(const void* x, const void* filter, bool constant_filter, const void* bias, void* out);
  // Whether run_pooled applies: f32, fused (winograd_fused), no residual or relu.
  bool pools_tiles() const {
    return fused_ && dtype_ == DType::kF32 && !residual_ && !relu_ && !flipped_;
  }
  // run() with the output max-pooled as each tile leaves the GEMMs (pools_tiles()).
  void run_pooled(const void* x, const void* filter, const void* bias, const PooledOutput& out);

 private:
  template <int M, typename T, typename P>
  void run_tiles(const void* x, const void* filter, bool constant_filter, const void* bias,
                 void* out, const PooledOutput* pooled = nullptr);

  ops::Conv2dGeometry g_;
  int m_;
  DType dtype_;
  bool flipped_, residual_, relu_, v4_;
  bool fused_ = false;                  // winograd_fused: per block of tiles, no chunks
  bool columns_ = false;                // winograd_columns: per block of output channels, no chunks
  int64_t chunk_ = 1;                   // images per chunk
  std::vector<PrimitiveRunner> gemms_;  // the full chunk's GEMM, then the last chunk's (if any)
  AlignedBuffer kept_;                  // a constant filter's transform
  const void* kept_from_ = nullptr;
};

// conv2d_backprop_filter of `g` as Winograd with m x m output tiles: x and dy (nhwc) -> the HWIO
// filter gradient, in chunks of images (winograd_chunk_images) summed by the GEMMs.
class WinogradFilterGradient {
 public:
  // dtype: of x and dy (f32, or bf16 read widened; the GEMMs on winograd_products' dtype);
  // dw_dtype: of the result (f32, or for bf16 inputs bf16, rounded once).
  WinogradFilterGradient(const ops::Conv2dGeometry& g, int m, DType dtype = DType::kF32,
                         DType dw_dtype = DType::kF32);
  void run(const void* x, const void* dy, void* dw);
  // Whether run_pooled applies: f32 (both dtypes), fused (winograd_fused).
  bool reads_pooled() const { return fused_ && dtype_ == DType::kF32 && dw_dtype_ == DType::kF32; }
  // run() on the convolution's gradient expanded tile by tile from a pooling's dy and argmax
  // (reads_pooled()). False if an argmax named no position of its window (dw then unspecified).
  bool run_pooled(const void* x, const PooledGradient& dy, void* dw);

 private:
  template <int M, typename T, typename P, typename Out>
  void run_tiles(const void* x, const void* dy, void* dw);

  ops::Conv2dGeometry g_;
  int m_;
  DType dtype_, dw_dtype_;
  bool v4_;
  bool fused_ = false;    // winograd_fused: per block of tiles, no chunks
  bool columns_ = false;  // winograd_columns: per block of output channels, no chunks
  int64_t chunk_ = 1;     // images per chunk
  // The first chunk's GEMM, the later full chunks' (adding to dU), the last shorter chunk's.
  std::vector<PrimitiveRunner> gemms_;
};

// conv2d_backprop_input of the forward convolution `g` (f32, nhwc) as the adjoint of its
// F(4x4, 3x3) tiles, fused per block of kFusedTiles tiles: per tile of g's output, W = A dy A^T,
// each position's [tiles, c_out] times the transformed filter's transpose [c_out, c_in], and
// B dV B^T added into the 6x6 pixels of x the tile reads (neighbouring tiles share two rows or
// columns). The forward of the flipped filter tiles dx instead: where g's output has fewer tiles
// than its input (VALID layers) the adjoint multiplies less, e.g. the W3 CNN's 32 -> 64 layer
// (13x13 -> 11x11): 9 tiles per image against 16. Where the forward runs per block of channels
// (winograd_columns), the adjoint does too, per block of input channels: W and dV transposed per
// position (36 x tiles x channels) where the flipped filter's forward transposes the whole
// transformed filter (36 x c_in x c_out).
class WinogradInputGradient {
 public:
  // Whether conv2d_backprop_input of `g` runs so: f32, where the forward runs fused F(4x4, 3x3)
  // (winograd_tile, winograd_fused) and g's output has fewer 4x4 tiles than its input, or where
  // it runs per block of channels (winograd_columns). TERN_WINOGRAD_ADJOINT=0 keeps the flipped
  // filter's forward.
  static bool applies(const ops::Conv2dGeometry& g, DType dtype);
  explicit WinogradInputGradient(const ops::Conv2dGeometry& g);
  // dy [n, out_h, out_w, c_out] and the HWIO filter -> dx [n, h, w, c_in], all f32.
  void run(const void* dy, const void* filter, void* dx);
  // Whether run_pooled applies: the fused form (not per block of channels).
  bool reads_pooled() const { return !columns_; }
  // run() on the convolution's gradient expanded tile by tile from a pooling's dy and argmax
  // (reads_pooled()). False if an argmax named no position of its window (dx then unspecified).
  bool run_pooled(const PooledGradient& dy, const void* filter, void* dx);

 private:
  ops::Conv2dGeometry g_;
  bool v4_;
  bool columns_;  // winograd_columns: per block of input channels
};

// Both gradients of a 3x3 layer trained under a 2x2 / 2 max pooling (conv2d_backprop_pooled: f32,
// nhwc), in one pass over its tiles: the fused filter gradient's and the fused adjoint input
// gradient's blocks of kFusedTiles tiles, each dy tile expanded from the pooled dy and argmax and
// transformed (W = A dy A^T) once for both products instead of once per gradient. Results are bit
// for bit those of WinogradFilterGradient::run_pooled and WinogradInputGradient::run_pooled.
// Where both of those take the layer (reads_pooled) and pooled_gradients_split(g).
class WinogradPooledGradients {
 public:
  explicit WinogradPooledGradients(const ops::Conv2dGeometry& g);
  // x [n, h, w, c_in], the pooling's dy and argmax, the HWIO filter -> dx (x's shape) and dw (the
  // filter's). False if an argmax named no position of its window (dx, dw then unspecified).
  bool run(const void* x, const PooledGradient& dy, const void* filter, void* dx, void* dw);

 private:
  ops::Conv2dGeometry g_;
  bool v4_;
};

// Whether the fused filter gradient's two fixed halves of blocks of tiles (one per thread) fall
// between images, so the input gradient's pixels each belong to one half (WinogradPooledGradients).
bool pooled_gradients_split(const ops::Conv2dGeometry& g);

}  // namespace tern::cpu::onednn

namespace tern::cpu {

// conv2d_backprop_input / conv2d_backprop_filter (onednn_conv_backward.cc); called by
// register_onednn_conv.
void register_onednn_conv_backward(kernels::KernelRegistry& r);

}  // namespace tern::cpu
