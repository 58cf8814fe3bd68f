// oneDNN conv2d_backprop_input (backward data) and conv2d_backprop_filter (backward weights):
// NHWC activations; the filter is reordered into the primitive's blocked layout before backward
// data, and the filter gradient is computed in the primitive's layout and reordered into HWIO.
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

class ConvBackwardDataKernel {
 public:
  explicit ConvBackwardDataKernel(const kernels::KernelSignature& sig) {
    guarded(str_cat("oneDNN ", sig.to_string()), [&] {
      ConvDescs d = backward_data_descs(sig);
      auto pd = backward_data_pd(d);
      runner_.init<dnnl::convolution_backward_data>(pd);
      runner_.add_arg(DNNL_ARG_DIFF_DST, pd.diff_dst_desc());
      runner_.add_arg(DNNL_ARG_WEIGHTS, pd.weights_desc());
      runner_.add_arg(DNNL_ARG_DIFF_SRC, pd.diff_src_desc());
      weights_ = WeightsReorder(d.weights, pd.weights_desc(), /*from_user=*/true);
      dy_ = ActivationReorder(d.dst, pd.diff_dst_desc(), 0);
      dx_ = ActivationReorder(d.src, pd.diff_src_desc(), 1);
    });
  }

  void run(kernels::KernelContext& ctx) {
    void* dx = ctx.outputs[0].raw_data();
    runner_.set(DNNL_ARG_DIFF_DST, dy_.to_primitive(ctx.inputs[0].raw_data()));
    runner_.set(DNNL_ARG_WEIGHTS, weights_.to_primitive(ctx.inputs[1].raw_data()));
    runner_.set(DNNL_ARG_DIFF_SRC, dx_.buffer(dx));
    runner_.execute();
    dx_.to_user(dx);
  }

 private:
  PrimitiveRunner runner_;
  WeightsReorder weights_;
  ActivationReorder dy_, dx_;
};

class ConvBackwardWeightsKernel {
 public:
  explicit ConvBackwardWeightsKernel(const kernels::KernelSignature& sig) {
    guarded(str_cat("oneDNN ", sig.to_string()), [&] {
      BackwardWeightsDescs b = backward_weights_descs(sig);
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
    runner_.set(DNNL_ARG_SRC, x_.to_primitive(ctx.inputs[0].raw_data()));
    runner_.set(DNNL_ARG_DIFF_DST, dy_.to_primitive(ctx.inputs[1].raw_data()));
    runner_.set(DNNL_ARG_DIFF_WEIGHTS, weights_.needed() ? weights_.buffer() : dfilter);
    runner_.execute();
    if (weights_.needed()) weights_.to_user(dfilter);
  }

 private:
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
