// oneDNN conv2d_backprop_input (backward data) and conv2d_backprop_filter (backward weights):
// NHWC activations; the input gradient of a stride-1 convolution as the forward convolution of
// the flipped filter (else oneDNN's backward data, the filter reordered into its blocked layout);
// the filter gradient as an im2col GEMM for layers with few output pixels (onednn_conv_gemm.cc),
// else computed in the primitive's layout and reordered into HWIO.
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <string_view>

#include "tern/backends/cpu/cpu_kernels.h"
#include "tern/backends/cpu/onednn_conv.h"

namespace tern::cpu {
namespace {

using namespace onednn;

dnnl::convolution_backward_data::primitive_desc backward_data_pd(const ConvDescs& d);

// conv2d_backprop_input(dy, filter){input_shape}.
ConvDescs backward_data_descs(const kernels::KernelSignature& sig) {
  Shape x(sig.attrs->get_ints("input_shape"));
  ConvDescs d = conv_descs(ops::conv2d_geometry(x, sig.inputs[1].shape, *sig.attrs),
                           sig.inputs[0].dtype, false);
  choose_conv_algorithm(
      d, [](const ConvDescs& c) { return backward_data_pd(c).scratchpad_desc().get_size(); });
  return d;
}

// conv2d_backprop_filter(x, dy){filter_shape}: descriptors in the inputs' dtype (also the forward
// hint) and the filter-gradient descriptors in the output's dtype (f32 from bf16 inputs when
// dfilter_dtype = "f32": oneDNN's bf16 backward-weights kernel accumulates in f32 and stores f32
// directly, at the speed of its bf16 result).
struct BackwardWeightsDescs {
  ConvDescs d;                    // src, diff_dst and the hint's weights: the inputs' dtype
  dnnl::memory::desc dw, dw_any;  // the filter gradient: the output's dtype
};

dnnl::convolution_backward_weights::primitive_desc backward_weights_pd(
    const BackwardWeightsDescs& b);

BackwardWeightsDescs backward_weights_descs(const kernels::KernelSignature& sig) {
  Shape filter(sig.attrs->get_ints("filter_shape"));
  ops::Conv2dGeometry geo = ops::conv2d_geometry(sig.inputs[0].shape, filter, *sig.attrs);
  BackwardWeightsDescs b{conv_descs(geo, sig.inputs[0].dtype, false), {}, {}};
  b.dw = b.d.weights;
  b.dw_any = b.d.weights_any;
  if (sig.outputs[0].dtype != sig.inputs[0].dtype) {
    ConvDescs out = conv_descs(geo, sig.outputs[0].dtype, false);
    b.dw = out.weights;
    b.dw_any = out.weights_any;
  }
  choose_conv_algorithm(b.d, [&](const ConvDescs& c) {
    BackwardWeightsDescs t = b;
    t.d = c;
    return backward_weights_pd(t).scratchpad_desc().get_size();
  });
  return b;
}

dnnl::convolution_backward_data::primitive_desc backward_data_pd(const ConvDescs& d) {
  dnnl::convolution_backward_data::desc desc(d.alg, primitive_src(d), d.weights_any,
                                             primitive_dst(d), d.strides, d.dilates, d.pad_l,
                                             d.pad_r);
  return dnnl::convolution_backward_data::primitive_desc(desc, make_attr(), engine(),
                                                         conv_forward_pd(d));
}

dnnl::convolution_backward_weights::primitive_desc backward_weights_pd(
    const BackwardWeightsDescs& b) {
  const ConvDescs& d = b.d;
  dnnl::convolution_backward_weights::desc desc(d.alg, primitive_src(d), b.dw_any, primitive_dst(d),
                                                d.strides, d.dilates, d.pad_l, d.pad_r);
  return dnnl::convolution_backward_weights::primitive_desc(desc, make_attr(), engine(),
                                                            conv_forward_pd(d));
}

// conv2d_backprop_input of a stride-1 ungrouped convolution, run as the forward convolution of
// dy with the filter flipped in H and W and its O and I swapped: dx[n, a, b, i] = sum over
// (h', w', o) of dy[n, a - pt' + h' d, b - pl' + w' d, o] f[kh-1-h', kw-1-w', i, o], with the
// paddings pt' = (kh-1) d - pt (and likewise the others; all >= 0 for SAME and VALID). oneDNN
// 2.6.3's forward kernels on this CPU beat its backward-data ones (`kernel_ab_bench`, batch 32
// unless said): bf16 ResNet-18 layers 128 channels at 16x16 0.86 -> 0.65 ms, 256 at 8x8 1.12 ->
// 0.84 ms, 512 at 4x4 4.57 -> 3.66 ms (64 at 32x32: equal); the W3 CNN's f32 32->64-channel layer
// (11x11 -> 13x13, batch 128) 2.17 ms (Winograd backward data) -> 1.48 ms (direct forward); f32
// direct 64 channels at 32x32 6.25 -> 5.34 ms, 128 at 16x16 5.55 -> 5.05 ms. But oneDNN's f32
// direct forward is slow on small images with many channels (512 at 4x4: 6.1 -> 10.5 ms; 256 at
// 5x5: 1.9 -> 2.6 ms), so f32 runs forward only with Winograd (equal to Winograd backward data)
// or on images of at least kMinF32DirectSize. TERN_INPUT_GRADIENT_AS_FORWARD=0 keeps oneDNN's
// backward data everywhere.
constexpr int64_t kMinF32DirectSize = 7;

bool input_gradient_as_forward_enabled() {
  static const bool on = [] {
    const char* v = std::getenv("TERN_INPUT_GRADIENT_AS_FORWARD");
    return v == nullptr || std::string_view(v) != "0";
  }();
  return on;
}

}  // namespace

std::optional<ops::Conv2dGeometry> onednn::flipped_forward_geometry(const ops::Conv2dGeometry& g) {
  if (g.groups != 1 || g.stride_h != 1 || g.stride_w != 1) return std::nullopt;
  ops::Conv2dGeometry f = g;
  f.h = g.out_h;
  f.w = g.out_w;
  f.c_in = g.c_out;
  f.c_out = g.c_in;
  f.out_h = g.h;
  f.out_w = g.w;
  f.pad_top = (g.kh - 1) * g.dil_h - g.pad_top;
  f.pad_bottom = (g.kh - 1) * g.dil_h - g.pad_bottom;
  f.pad_left = (g.kw - 1) * g.dil_w - g.pad_left;
  f.pad_right = (g.kw - 1) * g.dil_w - g.pad_right;
  if (f.pad_top < 0 || f.pad_bottom < 0 || f.pad_left < 0 || f.pad_right < 0) return std::nullopt;
  return f;
}

std::optional<ConvDescs> onednn::input_gradient_forward_descs(const ops::Conv2dGeometry& g,
                                                              DType dtype) {
  if (!input_gradient_as_forward_enabled()) return std::nullopt;
  std::optional<ops::Conv2dGeometry> fg = flipped_forward_geometry(g);
  if (!fg) return std::nullopt;
  ConvDescs d = conv_descs(*fg, dtype, false);
  choose_conv_algorithm(
      d, [](const ConvDescs& c) { return conv_forward_pd(c).scratchpad_desc().get_size(); });
  if (dtype == DType::kF32 && d.alg != dnnl::algorithm::convolution_winograd &&
      std::min(g.h, g.w) < kMinF32DirectSize) {
    return std::nullopt;
  }
  return d;
}

namespace {

class ConvBackwardDataKernel {
 public:
  explicit ConvBackwardDataKernel(const kernels::KernelSignature& sig) {
    guarded(str_cat("oneDNN ", sig.to_string()), [&] {
      Shape x(sig.attrs->get_ints("input_shape"));
      const ops::Conv2dGeometry g = ops::conv2d_geometry(x, sig.inputs[1].shape, *sig.attrs);
      // tern's Winograd first, as for the forward (ResNet-18's 512-channel 2x2 input gradient,
      // batch 32: 2.05-2.24 ms against 2.25-2.53 as the GEMM, `kernel_ab_bench`).
      if (init_winograd(g, sig.inputs[0].dtype)) return;
      // Then the taps inside small images only, where the padding holds many.
      if (valid_taps_apply(g, sig.inputs[0].dtype) &&
          try_build([&] {
            valid_taps_ = std::make_unique<ValidTapsConv>(g, sig.inputs[0].dtype,
                                                          ValidTapsConv::Direction::kInputGradient);
          }).empty()) {
        return;
      }
      if (input_gradient_gemm_applies(g, sig.inputs[0].dtype) &&
          try_build([&] {
            gemm_ = std::make_unique<InputGradientGemm>(g, sig.inputs[0].dtype);
          }).empty()) {
        return;
      }
      if (init_as_forward(g, sig.inputs[0].dtype)) return;
      ConvDescs d = backward_data_descs(sig);
      auto pd = backward_data_pd(d);
      init_runner<dnnl::convolution_backward_data>(pd, DNNL_ARG_DIFF_DST, pd.diff_dst_desc(), d.dst,
                                                   DNNL_ARG_DIFF_SRC, pd.diff_src_desc(), d.src,
                                                   d.weights);
    });
  }

  void run(kernels::KernelContext& ctx) {
    void* dx = ctx.outputs[0].raw_data();
    const void* filter = ctx.inputs[1].raw_data();
    if (valid_taps_) return valid_taps_->input_gradient(ctx.inputs[0].raw_data(), filter, dx);
    if (gemm_) return gemm_->run(ctx.inputs[0].raw_data(), filter, dx);
    if (adjoint_) return adjoint_->run(ctx.inputs[0].raw_data(), filter, dx);
    if (winograd_) return winograd_->run(ctx.inputs[0].raw_data(), filter, false, nullptr, dx);
    if (taps_ > 0) filter = flip(filter);
    runner_.set(dy_arg_, dy_.to_primitive(ctx.inputs[0].raw_data()));
    runner_.set(DNNL_ARG_WEIGHTS, weights_.to_primitive(filter));
    runner_.set(dx_arg_, dx_.buffer(dx));
    runner_.execute();
    dx_.to_user(dx);
  }

 private:
  // `pd`'s primitive, reading dy as argument dy_arg (layout dy) and writing dx as dx_arg (layout
  // dx), with the reorders from the user's layouts of dy, dx and the filter.
  template <typename Primitive, typename PrimitiveDesc>
  void init_runner(const PrimitiveDesc& pd, int dy_arg, const dnnl::memory::desc& dy,
                   const dnnl::memory::desc& user_dy, int dx_arg, const dnnl::memory::desc& dx,
                   const dnnl::memory::desc& user_dx, const dnnl::memory::desc& user_filter) {
    runner_.init<Primitive>(pd);
    dy_arg_ = dy_arg;
    dx_arg_ = dx_arg;
    runner_.add_arg(dy_arg, dy);
    runner_.add_arg(DNNL_ARG_WEIGHTS, pd.weights_desc());
    runner_.add_arg(dx_arg, dx);
    weights_ = WeightsReorder(user_filter, pd.weights_desc(), /*from_user=*/true);
    dy_ = ActivationReorder(user_dy, dy, 0);
    dx_ = ActivationReorder(user_dx, dx, 1);
  }

  // The forward convolution of flipped_forward_geometry as tern's Winograd, where it applies.
  bool init_winograd(const ops::Conv2dGeometry& g, DType dtype) {
    if (WinogradInputGradient::applies(g, dtype) &&
        try_build([&] { adjoint_ = std::make_unique<WinogradInputGradient>(g); }).empty()) {
      return true;
    }
    std::optional<ops::Conv2dGeometry> fg = flipped_forward_geometry(g);
    int m = 0;
    if (fg && dtype == DType::kBF16) {
      m = winograd_input_gradient_tile_bf16(*fg);
    } else if (fg) {
      m = winograd_tile(*fg, dtype);
    }
    if (m == 0) return false;
    return try_build([&] {
             winograd_ =
                 std::make_unique<WinogradForward>(*fg, m, /*flipped=*/true, Epilogue{}, dtype);
           })
        .empty();
  }

  // The forward convolution of flipped_forward_geometry, where input_gradient_forward_descs
  // says it applies.
  bool init_as_forward(const ops::Conv2dGeometry& g, DType dtype) {
    std::optional<ConvDescs> d = input_gradient_forward_descs(g, dtype);
    if (!d) return false;
    dnnl::convolution_forward::primitive_desc pd;
    if (!try_build([&] { pd = conv_forward_pd(*d); }).empty()) return false;
    // The HWIO filter with its taps in reverse order (flip()) is the flipped filter's
    // [kh, kw, c_in, c_out] = (O', I', H, W) with strides (c_out, 1, kw c_in c_out, c_in c_out).
    const int64_t tap = g.c_in * g.c_out;
    dnnl::memory::desc flipped({g.c_in, g.c_out, g.kh, g.kw}, to_dnnl(dtype),
                               dnnl_dims{g.c_out, 1, g.kw * tap, tap});
    init_runner<dnnl::convolution_forward>(pd, DNNL_ARG_SRC, pd.src_desc(), d->src, DNNL_ARG_DST,
                                           pd.dst_desc(), d->dst, flipped);
    taps_ = g.kh * g.kw;
    tap_bytes_ = tap * static_cast<int64_t>(dtype_size(dtype));
    return true;
  }

  // The filter's kh x kw taps ([c_in, c_out] each) in reverse order (H and W both reversed), in
  // the shared patches slot (oneDNN's reorder then reads it into the primitive's layout).
  const void* flip(const void* filter) {
    const auto* from = static_cast<const std::byte*>(filter);
    auto* to =
        static_cast<std::byte*>(layout_slot(kPatchesSlot, static_cast<size_t>(taps_ * tap_bytes_)));
#pragma omp parallel for schedule(static) if (taps_ * tap_bytes_ >= (int64_t{1} << 20))
    for (int64_t t = 0; t < taps_; ++t) {
      std::memcpy(to + t * tap_bytes_, from + (taps_ - 1 - t) * tap_bytes_,
                  static_cast<size_t>(tap_bytes_));
    }
    return to;
  }

  std::unique_ptr<ValidTapsConv> valid_taps_;       // small images, many taps in the padding
  std::unique_ptr<InputGradientGemm> gemm_;         // small images (input_gradient_gemm_applies)
  std::unique_ptr<WinogradInputGradient> adjoint_;  // before winograd_, where it applies
  std::unique_ptr<WinogradForward> winograd_;
  PrimitiveRunner runner_;
  int dy_arg_ = 0, dx_arg_ = 0;
  WeightsReorder weights_;
  ActivationReorder dy_, dx_;
  int64_t taps_ = 0, tap_bytes_ = 0;  // run as forward: the filter's taps and bytes per tap
};

class ConvBackwardWeightsKernel {
 public:
  explicit ConvBackwardWeightsKernel(const kernels::KernelSignature& sig) {
    guarded(str_cat("oneDNN ", sig.to_string()), [&] {
      // tern's Winograd before any oneDNN descriptor is built for the layer.
      const ops::Conv2dGeometry g = ops::conv2d_geometry(
          sig.inputs[0].shape, Shape(sig.attrs->get_ints("filter_shape")), *sig.attrs);
      const DType dtype = sig.inputs[0].dtype;
      const int m = dtype == DType::kBF16 ? winograd_tile_bf16(g) : winograd_tile(g, dtype);
      if (m != 0 && try_build([&] {
                      winograd_ = std::make_unique<WinogradFilterGradient>(g, m, dtype,
                                                                           sig.outputs[0].dtype);
                    }).empty()) {
        return;
      }
      // Then the taps inside small images only, where the padding holds many.
      if (valid_taps_apply(g, dtype) && try_build([&] {
                                          valid_taps_ = std::make_unique<ValidTapsConv>(
                                              g, dtype, ValidTapsConv::Direction::kFilterGradient,
                                              Epilogue{}, sig.outputs[0].dtype);
                                        }).empty()) {
        return;
      }
      BackwardWeightsDescs b = backward_weights_descs(sig);
      if (filter_gradient_gemm_applies(b.d.geo, sig.inputs[0].dtype) &&
          try_build([&] {
            gemm_ = std::make_unique<FilterGradientGemm>(b.d.geo, sig.inputs[0].dtype,
                                                         sig.outputs[0].dtype);
          }).empty()) {
        return;
      }
      auto pd = backward_weights_pd(b);
      runner_.init<dnnl::convolution_backward_weights>(pd);
      runner_.add_arg(DNNL_ARG_SRC, pd.src_desc());
      runner_.add_arg(DNNL_ARG_DIFF_DST, pd.diff_dst_desc());
      runner_.add_arg(DNNL_ARG_DIFF_WEIGHTS, pd.diff_weights_desc());
      weights_ = WeightsReorder(b.dw, pd.diff_weights_desc(), /*from_user=*/false);
      x_ = ActivationReorder(b.d.src, pd.src_desc(), 0);
      dy_ = ActivationReorder(b.d.dst, pd.diff_dst_desc(), 1);
    });
  }

  void run(kernels::KernelContext& ctx) {
    void* dfilter = ctx.outputs[0].raw_data();
    if (valid_taps_) {
      return valid_taps_->filter_gradient(ctx.inputs[0].raw_data(), ctx.inputs[1].raw_data(),
                                          dfilter);
    }
    if (winograd_)
      return winograd_->run(ctx.inputs[0].raw_data(), ctx.inputs[1].raw_data(), dfilter);
    if (gemm_) return gemm_->run(ctx.inputs[0].raw_data(), ctx.inputs[1].raw_data(), dfilter);
    runner_.set(DNNL_ARG_SRC, x_.to_primitive(ctx.inputs[0].raw_data()));
    runner_.set(DNNL_ARG_DIFF_DST, dy_.to_primitive(ctx.inputs[1].raw_data()));
    runner_.set(DNNL_ARG_DIFF_WEIGHTS, weights_.needed() ? weights_.buffer() : dfilter);
    runner_.execute();
    if (weights_.needed()) weights_.to_user(dfilter);
  }

 private:
  std::unique_ptr<ValidTapsConv> valid_taps_;  // small images, many taps in the padding
  std::unique_ptr<WinogradFilterGradient> winograd_;
  std::unique_ptr<FilterGradientGemm> gemm_;
  PrimitiveRunner runner_;
  WeightsReorder weights_;
  ActivationReorder x_, dy_;
};

template <typename Kernel, typename Build>
void add_conv_backward_candidate(kernels::KernelRegistry& r, std::string_view op, Build build) {
  kernels::KernelCandidate c;
  c.name = "onednn";
  c.dtypes = {DType::kF32, DType::kBF16};
  c.priority = kOneDnnPriority;
  c.decline = [build](const kernels::KernelSignature& sig) {
    if (std::string why = conv_decline_common(sig); !why.empty()) return why;
    return try_build([&] { build(sig); });
  };
  c.create = [](const kernels::KernelSignature& sig) { return make_kernel<Kernel>(sig); };
  r.add(op, std::move(c));
}

}  // namespace

void register_onednn_conv_backward(kernels::KernelRegistry& r) {
  add_conv_backward_candidate<ConvBackwardDataKernel>(
      r, "conv2d_backprop_input",
      [](const kernels::KernelSignature& sig) { backward_data_pd(backward_data_descs(sig)); });
  add_conv_backward_candidate<ConvBackwardWeightsKernel>(
      r, "conv2d_backprop_filter", [](const kernels::KernelSignature& sig) {
        backward_weights_pd(backward_weights_descs(sig));
      });
}

}  // namespace tern::cpu
