// oneDNN softmax and log_softmax along any axis, and their gradients from the forward output:
// softmax_grad(dy, y) and log_softmax_grad(dy, y) (oneDNN's softmax_v2 primitives, accurate and
// log algorithms). Tensors are viewed as [outer, axis(, inner)]; f32 and bf16. Inputs holding
// Inf or NaN run ref: oneDNN's exp clamps its argument, so a NaN in a row gave finite values
// where ref gives a NaN row (one scan per input decides).
#include "tern/backends/cpu/cpu_kernels.h"
#include "tern/backends/cpu/nan_guard.h"
#include "tern/backends/cpu/onednn_common.h"
#include "tern/backends/cpu/onednn_kernels.h"

namespace tern::cpu {
namespace {

using namespace onednn;

struct SoftmaxSpec {
  bool log = false;       // log_softmax
  bool backward = false;  // *_grad(dy, y)
};

dnnl::algorithm softmax_algorithm(const SoftmaxSpec& s) {
  return s.log ? dnnl::algorithm::softmax_log : dnnl::algorithm::softmax_accurate;
}

// The tensor as [outer, axis] (oneDNN's vectorized kernels need the axis innermost) or
// [outer, axis, inner]; the softmax runs over dim 1.
dnnl::memory::desc collapsed_desc(const kernels::KernelSignature& sig) {
  const Shape& s = sig.inputs[0].shape;
  int64_t axis = sig.attrs->get_int("axis");
  if (axis < 0) axis += s.rank();
  int64_t outer = 1, inner = 1;
  for (int i = 0; i < axis; ++i) outer *= s[i];
  for (int i = static_cast<int>(axis) + 1; i < s.rank(); ++i) inner *= s[i];
  dnnl_dims dims = {outer, s[static_cast<int>(axis)]};
  if (inner > 1) dims.push_back(inner);
  return dense_desc(dims, sig.inputs[0].dtype);
}

dnnl::softmax_v2_forward::primitive_desc forward_pd(const kernels::KernelSignature& sig,
                                                    const SoftmaxSpec& s) {
  dnnl::memory::desc md = collapsed_desc(sig);
  dnnl::softmax_v2_forward::desc desc(dnnl::prop_kind::forward_training, softmax_algorithm(s), md,
                                      md, 1);
  return dnnl::softmax_v2_forward::primitive_desc(desc, make_attr(), engine());
}

dnnl::softmax_v2_backward::primitive_desc backward_pd(const kernels::KernelSignature& sig,
                                                      const SoftmaxSpec& s) {
  dnnl::memory::desc md = collapsed_desc(sig);
  dnnl::softmax_v2_backward::desc desc(softmax_algorithm(s), md, md, md, 1);
  return dnnl::softmax_v2_backward::primitive_desc(desc, make_attr(), engine(), forward_pd(sig, s));
}

class SoftmaxKernel {
 public:
  SoftmaxKernel(const kernels::KernelSignature& sig, SoftmaxSpec spec)
      : spec_(spec), non_finite_fallback_(sig) {
    guarded(str_cat("oneDNN ", sig.to_string()), [&] {
      if (spec_.backward) {
        auto pd = backward_pd(sig, spec_);
        runner_.init<dnnl::softmax_v2_backward>(pd);
        runner_.add_arg(DNNL_ARG_DIFF_DST, pd.diff_dst_desc());
        runner_.add_arg(DNNL_ARG_DST, pd.dst_desc());
        runner_.add_arg(DNNL_ARG_DIFF_SRC, pd.diff_src_desc());
      } else {
        auto pd = forward_pd(sig, spec_);
        runner_.init<dnnl::softmax_v2_forward>(pd);
        runner_.add_arg(DNNL_ARG_SRC, pd.src_desc());
        runner_.add_arg(DNNL_ARG_DST, pd.dst_desc());
      }
    });
  }

  void run(kernels::KernelContext& ctx) {
    for (const Tensor& t : ctx.inputs) {
      if (has_non_finite(t)) return non_finite_fallback_.run(ctx);
    }
    if (spec_.backward) {
      runner_.set(DNNL_ARG_DIFF_DST, ctx.inputs[0].raw_data());
      runner_.set(DNNL_ARG_DST, ctx.inputs[1].raw_data());
      runner_.set(DNNL_ARG_DIFF_SRC, ctx.outputs[0].raw_data());
    } else {
      runner_.set(DNNL_ARG_SRC, ctx.inputs[0].raw_data());
      runner_.set(DNNL_ARG_DST, ctx.outputs[0].raw_data());
    }
    runner_.execute();
  }

 private:
  SoftmaxSpec spec_;
  RefFallback non_finite_fallback_;
  PrimitiveRunner runner_;
};

void add_softmax_candidate(kernels::KernelRegistry& r, std::string_view op, SoftmaxSpec spec) {
  kernels::KernelCandidate c;
  c.name = "onednn";
  c.dtypes = {DType::kF32, DType::kBF16};
  c.priority = kOneDnnPriority;
  c.decline = [spec](const kernels::KernelSignature& sig) -> std::string {
    for (const auto& t : sig.inputs) {
      if (std::string why = dtype_support(t.dtype); !why.empty()) return why;
    }
    if (std::string why = nonempty(sig); !why.empty()) return why;
    return try_build([&] {
      if (spec.backward) {
        backward_pd(sig, spec);
      } else {
        forward_pd(sig, spec);
      }
    });
  };
  c.create = [spec](const kernels::KernelSignature& sig) {
    return make_kernel<SoftmaxKernel>(sig, spec);
  };
  r.add(op, std::move(c));
}

}  // namespace

void register_onednn_softmax(kernels::KernelRegistry& r) {
  initialize_onednn();
  add_softmax_candidate(r, "softmax", {.log = false, .backward = false});
  add_softmax_candidate(r, "log_softmax", {.log = true, .backward = false});
  add_softmax_candidate(r, "softmax_grad", {.log = false, .backward = true});
  add_softmax_candidate(r, "log_softmax_grad", {.log = true, .backward = true});
}

}  // namespace tern::cpu
