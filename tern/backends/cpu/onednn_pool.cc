// oneDNN 2-D pooling over NHWC: max_pool2d, avg_pool2d (TF SAME averages over in-bounds elements:
// oneDNN's avg_exclude_padding), global_avg_pool, avg_pool2d_grad, and max_pool2d_grad. oneDNN's
// max backward needs the forward's workspace (argmax positions), which a separate grad node does
// not have: max_pool2d_grad recomputes the forward (a cheap, memory-bound pass) into a kernel-owned
// workspace and then runs the backward. Max pooling over an input holding NaN runs ref (oneDNN
// drops the NaN). Geometry comes from tern/ops/conv_geometry.h.
#include "tern/backends/cpu/cpu_kernels.h"
#include "tern/backends/cpu/nan_guard.h"
#include "tern/backends/cpu/onednn_common.h"
#include "tern/backends/cpu/onednn_kernels.h"
#include "tern/ops/conv_geometry.h"

namespace tern::cpu {
namespace {

using namespace onednn;

struct PoolDescs {
  dnnl::memory::desc src, dst;  // nhwc
  dnnl_dims strides, kernel, pad_l, pad_r;
};

PoolDescs pool_descs(const Shape& x, DType dtype, const ops::Attrs& attrs) {
  ops::Pool2dGeometry g = ops::pool2d_geometry(x, attrs);
  dnnl_dt dt = to_dnnl(dtype);
  return {dnnl::memory::desc({g.n, g.c, g.h, g.w}, dt, dnnl_tag::nhwc),
          dnnl::memory::desc({g.n, g.c, g.out_h, g.out_w}, dt, dnnl_tag::nhwc),
          {g.stride_h, g.stride_w},
          {g.kh, g.kw},
          {g.pad_top, g.pad_left},
          {g.pad_bottom, g.pad_right}};
}

dnnl::algorithm pool_algorithm(bool max) {
  return max ? dnnl::algorithm::pooling_max : dnnl::algorithm::pooling_avg_exclude_padding;
}

dnnl::pooling_forward::primitive_desc forward_pd(const PoolDescs& d, bool max,
                                                 dnnl::prop_kind prop) {
  dnnl::pooling_forward::desc desc(prop, pool_algorithm(max), d.src, d.dst, d.strides, d.kernel,
                                   d.pad_l, d.pad_r);
  return dnnl::pooling_forward::primitive_desc(desc, make_attr(), engine());
}

dnnl::pooling_backward::primitive_desc backward_pd(
    const PoolDescs& d, bool max, const dnnl::pooling_forward::primitive_desc& hint) {
  dnnl::pooling_backward::desc desc(pool_algorithm(max), d.src, d.dst, d.strides, d.kernel, d.pad_l,
                                    d.pad_r);
  return dnnl::pooling_backward::primitive_desc(desc, make_attr(), engine(), hint);
}

// global_avg_pool: one window over all of H x W ([N, C] and [N, 1, 1, C] share a layout).
PoolDescs global_pool_descs(const Shape& x, DType dtype) {
  dnnl_dt dt = to_dnnl(dtype);
  return {dnnl::memory::desc({x[0], x[3], x[1], x[2]}, dt, dnnl_tag::nhwc),
          dnnl::memory::desc({x[0], x[3], 1, 1}, dt, dnnl_tag::nhwc),
          {1, 1},
          {x[1], x[2]},
          {0, 0},
          {0, 0}};
}

PoolDescs descs_of(const kernels::KernelSignature& sig) {
  const std::string& op = sig.op->name;
  DType dtype = sig.inputs[0].dtype;
  if (op == "global_avg_pool") return global_pool_descs(sig.inputs[0].shape, dtype);
  // x of the forward pool: attribute input_shape of avg_pool2d_grad, else input 0.
  if (op == "avg_pool2d_grad") {
    return pool_descs(Shape(sig.attrs->get_ints("input_shape")), dtype, *sig.attrs);
  }
  return pool_descs(sig.inputs[0].shape, dtype, *sig.attrs);
}

// max_pool2d / avg_pool2d. oneDNN's max ignores a NaN in its window where ref returns it: an
// input holding NaN runs ref (one scan decides; avg keeps NaN by itself).
class PoolForwardKernel {
 public:
  PoolForwardKernel(const kernels::KernelSignature& sig, bool max) : max_(max) {
    if (max_) nan_fallback_ = RefFallback(sig);
    guarded(str_cat("oneDNN ", sig.to_string()), [&] {
      auto pd = forward_pd(descs_of(sig), max, dnnl::prop_kind::forward_inference);
      runner_.init<dnnl::pooling_forward>(pd);
      runner_.add_arg(DNNL_ARG_SRC, pd.src_desc());
      runner_.add_arg(DNNL_ARG_DST, pd.dst_desc());
    });
  }

  void run(kernels::KernelContext& ctx) {
    if (max_ && has_nan(ctx.inputs[0])) return nan_fallback_.run(ctx);
    runner_.set(DNNL_ARG_SRC, ctx.inputs[0].raw_data());
    runner_.set(DNNL_ARG_DST, ctx.outputs[0].raw_data());
    runner_.execute();
  }

 private:
  bool max_;
  RefFallback nan_fallback_;
  PrimitiveRunner runner_;
};

// avg_pool2d_grad(dy){input_shape}.
class AvgPoolGradKernel {
 public:
  explicit AvgPoolGradKernel(const kernels::KernelSignature& sig) {
    guarded(str_cat("oneDNN ", sig.to_string()), [&] {
      PoolDescs d = descs_of(sig);
      auto pd = backward_pd(d, false, forward_pd(d, false, dnnl::prop_kind::forward_training));
      runner_.init<dnnl::pooling_backward>(pd);
      runner_.add_arg(DNNL_ARG_DIFF_DST, pd.diff_dst_desc());
      runner_.add_arg(DNNL_ARG_DIFF_SRC, pd.diff_src_desc());
    });
  }

  void run(kernels::KernelContext& ctx) {
    runner_.set(DNNL_ARG_DIFF_DST, ctx.inputs[0].raw_data());
    runner_.set(DNNL_ARG_DIFF_SRC, ctx.outputs[0].raw_data());
    runner_.execute();
  }

 private:
  PrimitiveRunner runner_;
};

// max_pool2d_grad(x, dy): forward (training) into y_ and workspace_, then backward. An x holding
// NaN runs ref (oneDNN's argmax skips the NaN that ref routes the gradient to).
class MaxPoolGradKernel {
 public:
  explicit MaxPoolGradKernel(const kernels::KernelSignature& sig) : nan_fallback_(sig) {
    guarded(str_cat("oneDNN ", sig.to_string()), [&] {
      PoolDescs d = descs_of(sig);
      auto fwd = forward_pd(d, true, dnnl::prop_kind::forward_training);
      auto bwd = backward_pd(d, true, fwd);
      forward_.init<dnnl::pooling_forward>(fwd);
      forward_.add_arg(DNNL_ARG_SRC, fwd.src_desc());
      forward_.add_arg(DNNL_ARG_DST, fwd.dst_desc());
      forward_.add_arg(DNNL_ARG_WORKSPACE, fwd.workspace_desc());
      backward_.init<dnnl::pooling_backward>(bwd);
      backward_.add_arg(DNNL_ARG_DIFF_DST, bwd.diff_dst_desc());
      backward_.add_arg(DNNL_ARG_WORKSPACE, bwd.workspace_desc());
      backward_.add_arg(DNNL_ARG_DIFF_SRC, bwd.diff_src_desc());
      y_ = AlignedBuffer(fwd.dst_desc().get_size());
      workspace_ = AlignedBuffer(fwd.workspace_desc().get_size());
    });
  }

  void run(kernels::KernelContext& ctx) {
    if (has_nan(ctx.inputs[0])) return nan_fallback_.run(ctx);
    forward_.set(DNNL_ARG_SRC, ctx.inputs[0].raw_data());
    forward_.set(DNNL_ARG_DST, y_.data());
    forward_.set(DNNL_ARG_WORKSPACE, workspace_.data());
    forward_.execute();
    backward_.set(DNNL_ARG_DIFF_DST, ctx.inputs[1].raw_data());
    backward_.set(DNNL_ARG_WORKSPACE, workspace_.data());
    backward_.set(DNNL_ARG_DIFF_SRC, ctx.outputs[0].raw_data());
    backward_.execute();
  }

 private:
  RefFallback nan_fallback_;
  PrimitiveRunner forward_, backward_;
  AlignedBuffer y_, workspace_;
};

template <typename Build>
std::string pool_decline(const kernels::KernelSignature& sig, Build build) {
  for (const auto& t : sig.inputs) {
    if (std::string why = dtype_support(t.dtype); !why.empty()) return why;
  }
  if (std::string why = nonempty(sig); !why.empty()) return why;
  return try_build([&] { build(descs_of(sig)); });
}

void add_pool_candidate(
    kernels::KernelRegistry& r, std::string_view op,
    std::function<std::string(const kernels::KernelSignature&)> decline,
    std::function<std::unique_ptr<kernels::Kernel>(const kernels::KernelSignature&)> create) {
  kernels::KernelCandidate c;
  c.name = "onednn";
  c.dtypes = {DType::kF32, DType::kBF16};
  c.priority = kOneDnnPriority;
  c.decline = std::move(decline);
  c.create = std::move(create);
  r.add(op, std::move(c));
}

}  // namespace

void register_onednn_pool(kernels::KernelRegistry& r) {
  initialize_onednn();
  for (std::string_view op : {"max_pool2d", "avg_pool2d", "global_avg_pool"}) {
    bool max = op == "max_pool2d";
    add_pool_candidate(
        r, op,
        [max](const kernels::KernelSignature& sig) {
          return pool_decline(sig, [max](const PoolDescs& d) {
            forward_pd(d, max, dnnl::prop_kind::forward_inference);
          });
        },
        [max](const kernels::KernelSignature& sig) {
          return make_kernel<PoolForwardKernel>(sig, max);
        });
  }
  add_pool_candidate(
      r, "avg_pool2d_grad",
      [](const kernels::KernelSignature& sig) {
        return pool_decline(sig, [](const PoolDescs& d) {
          backward_pd(d, false, forward_pd(d, false, dnnl::prop_kind::forward_training));
        });
      },
      [](const kernels::KernelSignature& sig) { return make_kernel<AvgPoolGradKernel>(sig); });
  add_pool_candidate(
      r, "max_pool2d_grad",
      [](const kernels::KernelSignature& sig) {
        return pool_decline(sig, [](const PoolDescs& d) {
          backward_pd(d, true, forward_pd(d, true, dnnl::prop_kind::forward_training));
        });
      },
      [](const kernels::KernelSignature& sig) { return make_kernel<MaxPoolGradKernel>(sig); });
}

}  // namespace tern::cpu
