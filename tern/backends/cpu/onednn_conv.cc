// oneDNN conv2d and fused_conv2d forward: NHWC activations, the HWIO filter reordered each run
// into the blocked layout the primitive chose (the reorder primitive is built once; a constant
// filter, as in a served model, only at the first run: for Winograd the reorder is the filter
// transform, most of a batch-1 ResNet-18 call when it ran every time), groups
// (incl. depthwise) through grouped weight dims; fused_conv2d adds bias, residual (sum post-op)
// and activation (eltwise post-op; relu after the primitive, keeping NaN). Also the shared
// descriptor helpers of onednn_conv.h.
#include "tern/backends/cpu/onednn_conv.h"

#include <cstdlib>
#include <string_view>

#include "tern/backends/cpu/cpu_kernels.h"
#include "tern/backends/cpu/onednn_kernels.h"

namespace tern::cpu {

namespace onednn {

ConvDescs conv_descs(const ops::Conv2dGeometry& g, DType dtype, bool with_bias) {
  ConvDescs d;
  d.geo = g;
  dnnl_dt dt = to_dnnl(dtype);
  d.src = dnnl::memory::desc({g.n, g.c_in, g.h, g.w}, dt, dnnl_tag::nhwc);
  d.dst = dnnl::memory::desc({g.n, g.c_out, g.out_h, g.out_w}, dt, dnnl_tag::nhwc);
  d.src_any = dnnl::memory::desc({g.n, g.c_in, g.h, g.w}, dt, dnnl_tag::any);
  d.dst_any = dnnl::memory::desc({g.n, g.c_out, g.out_h, g.out_w}, dt, dnnl_tag::any);
  // HWIO storage [kh, kw, cin_g, cout] with cout = group * cout_g + o.
  int64_t cin_g = g.c_in_per_group(), cout_g = g.c_out_per_group();
  int64_t s_kw = cin_g * g.c_out, s_kh = g.kw * s_kw;
  if (g.groups == 1) {
    dnnl_dims dims = {g.c_out, g.c_in, g.kh, g.kw};
    d.weights = dnnl::memory::desc(dims, dt, dnnl_dims{1, g.c_out, s_kh, s_kw});
    d.weights_any = dnnl::memory::desc(dims, dt, dnnl_tag::any);
  } else {
    dnnl_dims dims = {g.groups, cout_g, cin_g, g.kh, g.kw};
    d.weights = dnnl::memory::desc(dims, dt, dnnl_dims{cout_g, 1, g.c_out, s_kh, s_kw});
    d.weights_any = dnnl::memory::desc(dims, dt, dnnl_tag::any);
  }
  if (with_bias) d.bias = dnnl::memory::desc({g.c_out}, dt, dnnl_tag::a);
  d.strides = {g.stride_h, g.stride_w};
  d.dilates = {g.dil_h - 1, g.dil_w - 1};
  d.pad_l = {g.pad_top, g.pad_left};
  d.pad_r = {g.pad_bottom, g.pad_right};
  return d;
}

dnnl::convolution_forward::primitive_desc conv_forward_pd(const ConvDescs& d,
                                                          const dnnl::post_ops& ops) {
  dnnl::convolution_forward::desc desc(dnnl::prop_kind::forward_training, d.alg, primitive_src(d),
                                       d.weights_any, d.bias, primitive_dst(d), d.strides,
                                       d.dilates, d.pad_l, d.pad_r);
  return dnnl::convolution_forward::primitive_desc(desc, make_attr(ops), engine());
}

const dnnl::memory::desc& primitive_src(const ConvDescs& d) {
  return d.alg == dnnl::algorithm::convolution_winograd ? d.src_any : d.src;
}

const dnnl::memory::desc& primitive_dst(const ConvDescs& d) {
  return d.alg == dnnl::algorithm::convolution_winograd ? d.dst_any : d.dst;
}

void choose_conv_algorithm(ConvDescs& d, const std::function<size_t(const ConvDescs&)>& build) {
  static const bool enabled = [] {
    const char* v = std::getenv("TERN_ONEDNN_WINOGRAD");
    return v == nullptr || std::string_view(v) != "0";
  }();
  const ops::Conv2dGeometry& g = d.geo;
  d.alg = dnnl::algorithm::convolution_direct;
  if (!enabled || d.src.data_type() != dnnl_dt::f32 || g.kh != 3 || g.kw != 3 || g.stride_h != 1 ||
      g.stride_w != 1 || g.dil_h != 1 || g.dil_w != 1 || g.groups != 1 || g.c_in % 16 != 0 ||
      g.c_out % 16 != 0 || g.n * g.out_h * g.out_w < kWinogradMinOutputPixels) {
    return;
  }
  d.alg = dnnl::algorithm::convolution_winograd;
  size_t scratchpad = 0;
  if (!try_build([&] { scratchpad = build(d); }).empty() || scratchpad > kWinogradScratchpadLimit) {
    d.alg = dnnl::algorithm::convolution_direct;
  }
}

std::string conv_decline_common(const kernels::KernelSignature& sig) {
  for (const auto& t : sig.inputs) {
    if (std::string why = dtype_support(t.dtype); !why.empty()) return why;
  }
  return nonempty(sig);
}

WeightsReorder::WeightsReorder(const dnnl::memory::desc& user, const dnnl::memory::desc& primitive,
                               bool from_user) {
  if (user == primitive) return;
  buffer_ = AlignedBuffer(primitive.get_size());
  reorder_ = from_user ? Reorder(user, primitive) : Reorder(primitive, user);
}

const void* WeightsReorder::to_primitive(const void* user) {
  if (!needed()) return user;
  reorder_.run(user, buffer_.data());
  return buffer_.data();
}

const void* WeightsReorder::to_primitive_kept(const void* user) {
  if (!needed()) return user;
  if (kept_from_ != user) {
    reorder_.run(user, buffer_.data());
    kept_from_ = user;
  }
  return buffer_.data();
}

void WeightsReorder::to_user(void* user) {
  reorder_.run(buffer_.data(), user);
}

}  // namespace onednn

namespace {

using namespace onednn;

ConvDescs forward_descs(const kernels::KernelSignature& sig, const Epilogue& ep) {
  ops::Conv2dGeometry g =
      ops::conv2d_geometry(sig.inputs[0].shape, sig.inputs[1].shape, *sig.attrs);
  ConvDescs d = conv_descs(g, sig.inputs[0].dtype, ep.bias_input >= 0);
  dnnl::post_ops ops = epilogue_post_ops(ep);
  choose_conv_algorithm(
      d, [&](const ConvDescs& c) { return conv_forward_pd(c, ops).scratchpad_desc().get_size(); });
  return d;
}

class ConvForwardKernel {
 public:
  ConvForwardKernel(const kernels::KernelSignature& sig, Epilogue ep)
      : ep_(std::move(ep)), constant_filter_(sig.input_is_constant(1)) {
    guarded(str_cat("oneDNN ", sig.to_string()), [&] {
      ConvDescs d = forward_descs(sig, ep_);
      auto pd = conv_forward_pd(d, epilogue_post_ops(ep_));
      runner_.init<dnnl::convolution_forward>(pd);
      runner_.add_arg(DNNL_ARG_SRC, pd.src_desc());
      runner_.add_arg(DNNL_ARG_WEIGHTS, pd.weights_desc());
      runner_.add_arg(DNNL_ARG_DST, pd.dst_desc());
      if (ep_.bias_input >= 0) runner_.add_arg(DNNL_ARG_BIAS, pd.bias_desc());
      weights_ = WeightsReorder(d.weights, pd.weights_desc(), /*from_user=*/true);
      src_ = ActivationReorder(d.src, pd.src_desc(), 0);
      dst_ = ActivationReorder(d.dst, pd.dst_desc(), 1);
    });
  }

  void run(kernels::KernelContext& ctx) {
    load_residual(ep_, ctx);
    void* out = ctx.outputs[0].raw_data();
    // The residual (sum post-op) must be in the primitive's dst layout before it runs.
    void* dst = ep_.residual_input >= 0 ? dst_.to_primitive(out) : dst_.buffer(out);
    runner_.set(DNNL_ARG_SRC, src_.to_primitive(ctx.inputs[0].raw_data()));
    const void* filter = ctx.inputs[1].raw_data();
    runner_.set(DNNL_ARG_WEIGHTS, constant_filter_ ? weights_.to_primitive_kept(filter)
                                                   : weights_.to_primitive(filter));
    if (ep_.bias_input >= 0) runner_.set(DNNL_ARG_BIAS, ctx.inputs[ep_.bias_input].raw_data());
    runner_.set(DNNL_ARG_DST, dst);
    runner_.execute();
    dst_.to_user(out);
    finish_epilogue(ep_, ctx);
  }

 private:
  Epilogue ep_;
  bool constant_filter_;
  PrimitiveRunner runner_;
  WeightsReorder weights_;
  ActivationReorder src_, dst_;
};

void add_conv_forward_candidate(kernels::KernelRegistry& r, std::string_view op, bool fused) {
  auto epilogue = [fused](const kernels::KernelSignature& sig) {
    return fused ? fused_epilogue(*sig.attrs) : Epilogue{};
  };
  kernels::KernelCandidate c;
  c.name = "onednn";
  c.dtypes = {DType::kF32, DType::kBF16};
  c.priority = kOneDnnPriority;
  c.decline = [epilogue](const kernels::KernelSignature& sig) {
    Epilogue ep = epilogue(sig);
    if (std::string why = conv_decline_common(sig); !why.empty()) return why;
    if (std::string why = epilogue_support(sig, ep); !why.empty()) return why;
    return try_build([&] { conv_forward_pd(forward_descs(sig, ep), epilogue_post_ops(ep)); });
  };
  c.create = [epilogue](const kernels::KernelSignature& sig) {
    return make_kernel<ConvForwardKernel>(sig, epilogue(sig));
  };
  r.add(op, std::move(c));
}

}  // namespace

void register_onednn_conv(kernels::KernelRegistry& r) {
  initialize_onednn();
  add_conv_forward_candidate(r, "conv2d", /*fused=*/false);
  add_conv_forward_candidate(r, "fused_conv2d", /*fused=*/true);
  register_onednn_conv_backward(r);
}

}  // namespace tern::cpu
