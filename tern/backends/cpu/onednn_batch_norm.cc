// oneDNN batch normalization over channels-last data (channel = last axis, any rank; x is viewed
// as [M, C] in nhwc order): batch_norm_training (y, batch mean, biased variance),
// batch_norm_inference (given statistics) and batch_norm_grad (dx, dgamma, dbeta from the saved
// statistics). oneDNN keeps gamma, beta, mean and variance in f32: for all-bf16 nodes these [C]
// vectors are converted in kernel-owned buffers each run (x, y, dy, dx stay bf16); the mixed form
// (bf16 x, dy with f32 gamma, beta and statistics) passes them through as they are.
#include <vector>

#include "tern/backends/cpu/cpu_kernels.h"
#include "tern/backends/cpu/onednn_common.h"
#include "tern/backends/cpu/onednn_kernels.h"

namespace tern::cpu {
namespace {

using namespace onednn;
using dnnl::normalization_flags;

enum class BnKind { kTraining, kInference, kGrad };

// x [..., C] in oneDNN's nhwc order (the same bytes as tern's row-major layout): NHWC as is
// (oneDNN's kernels split the work better with real spatial dims), other ranks as [M, C, 1, 1].
dnnl::memory::desc data_desc(const TensorType& x) {
  const Shape& s = x.shape;
  int64_t c = s[s.rank() - 1];
  dnnl_dims dims =
      s.rank() == 4 ? dnnl_dims{s[0], c, s[1], s[2]} : dnnl_dims{s.num_elements() / c, c, 1, 1};
  return dnnl::memory::desc(dims, to_dnnl(x.dtype), dnnl_tag::nhwc);
}

dnnl::batch_normalization_forward::primitive_desc forward_pd(const TensorType& x, float eps,
                                                             bool training) {
  normalization_flags flags = normalization_flags::use_scale | normalization_flags::use_shift;
  if (!training) flags = flags | normalization_flags::use_global_stats;
  auto prop = training ? dnnl::prop_kind::forward_training : dnnl::prop_kind::forward_inference;
  dnnl::batch_normalization_forward::desc desc(prop, data_desc(x), eps, flags);
  return dnnl::batch_normalization_forward::primitive_desc(desc, make_attr(), engine());
}

dnnl::batch_normalization_backward::primitive_desc backward_pd(const TensorType& x, float eps) {
  normalization_flags flags = normalization_flags::use_scale | normalization_flags::use_shift;
  dnnl::batch_normalization_backward::desc desc(dnnl::prop_kind::backward, data_desc(x),
                                                data_desc(x), eps, flags);
  return dnnl::batch_normalization_backward::primitive_desc(desc, make_attr(), engine(),
                                                            forward_pd(x, eps, true));
}

// A [C] parameter as the f32 oneDNN reads or writes: the tensor itself for f32, else a converted
// copy in an owned buffer.
class ChannelVector {
 public:
  ChannelVector(DType dtype, int64_t c) : dtype_(dtype), f32_(dtype == DType::kF32 ? 0 : c) {}
  // For an input: the f32 values of `t`.
  const void* read(const Tensor& t) {
    if (dtype_ == DType::kF32) return last_ = t.raw_data();
    const bfloat16* p = t.data<bfloat16>();
    for (size_t i = 0; i < f32_.size(); ++i) f32_[i] = static_cast<float>(p[i]);
    return last_ = f32_.data();
  }
  // What the last read() returned.
  const void* last() const { return last_; }
  // For an output: where oneDNN writes; finish() copies it into `t`.
  void* write(Tensor& t) { return dtype_ == DType::kF32 ? t.raw_data() : f32_.data(); }
  void finish(Tensor& t) const {
    if (dtype_ == DType::kF32) return;
    bfloat16* p = t.data<bfloat16>();
    for (size_t i = 0; i < f32_.size(); ++i) p[i] = bfloat16(f32_[i]);
  }

 private:
  DType dtype_;
  std::vector<float> f32_;
  const void* last_ = nullptr;
};

class BatchNormKernel {
 public:
  BatchNormKernel(const kernels::KernelSignature& sig, BnKind kind) : kind_(kind) {
    const TensorType& x = sig.inputs[kind == BnKind::kGrad ? 1 : 0];
    int64_t c = x.shape[x.shape.rank() - 1];
    const DType param_dtype = sig.inputs[kind == BnKind::kGrad ? 2 : 1].dtype;
    for (int i = 0; i < 5; ++i) params_.emplace_back(param_dtype, c);
    float eps = static_cast<float>(sig.attrs->get_float("epsilon"));
    guarded(str_cat("oneDNN ", sig.to_string()), [&] {
      if (kind == BnKind::kGrad) {
        auto pd = backward_pd(x, eps);
        runner_.init<dnnl::batch_normalization_backward>(pd);
        for (int arg : {DNNL_ARG_DIFF_DST, DNNL_ARG_SRC, DNNL_ARG_DIFF_SRC}) {
          runner_.add_arg(arg, pd.src_desc());
        }
        for (int arg : {DNNL_ARG_SCALE, DNNL_ARG_SHIFT, DNNL_ARG_MEAN, DNNL_ARG_VARIANCE,
                        DNNL_ARG_DIFF_SCALE, DNNL_ARG_DIFF_SHIFT}) {
          runner_.add_arg(arg, dnnl::memory::desc({c}, dnnl_dt::f32, dnnl_tag::a));
        }
        return;
      }
      auto pd = forward_pd(x, eps, kind == BnKind::kTraining);
      runner_.init<dnnl::batch_normalization_forward>(pd);
      runner_.add_arg(DNNL_ARG_SRC, pd.src_desc());
      runner_.add_arg(DNNL_ARG_DST, pd.dst_desc());
      for (int arg : {DNNL_ARG_SCALE, DNNL_ARG_SHIFT, DNNL_ARG_MEAN, DNNL_ARG_VARIANCE}) {
        runner_.add_arg(arg, dnnl::memory::desc({c}, dnnl_dt::f32, dnnl_tag::a));
      }
    });
  }

  void run(kernels::KernelContext& ctx) {
    auto in = [&](int i) { return ctx.inputs[i].raw_data(); };
    auto out = [&](int i) { return ctx.outputs[i].raw_data(); };
    switch (kind_) {
      case BnKind::kTraining:  // x, gamma, beta -> y, mean, var
        runner_.set(DNNL_ARG_SRC, in(0));
        runner_.set(DNNL_ARG_SCALE, params_[0].read(ctx.inputs[1]));
        runner_.set(DNNL_ARG_SHIFT, params_[1].read(ctx.inputs[2]));
        runner_.set(DNNL_ARG_DST, out(0));
        runner_.set(DNNL_ARG_MEAN, params_[2].write(ctx.outputs[1]));
        runner_.set(DNNL_ARG_VARIANCE, params_[3].write(ctx.outputs[2]));
        runner_.execute();
        params_[2].finish(ctx.outputs[1]);
        params_[3].finish(ctx.outputs[2]);
        break;
      case BnKind::kInference:  // x, gamma, beta, mean, var -> y
        runner_.set(DNNL_ARG_SRC, in(0));
        runner_.set(DNNL_ARG_SCALE, params_[0].read(ctx.inputs[1]));
        runner_.set(DNNL_ARG_SHIFT, params_[1].read(ctx.inputs[2]));
        runner_.set(DNNL_ARG_MEAN, params_[2].read(ctx.inputs[3]));
        runner_.set(DNNL_ARG_VARIANCE, params_[3].read(ctx.inputs[4]));
        runner_.set(DNNL_ARG_DST, out(0));
        runner_.execute();
        break;
      case BnKind::kGrad:  // dy, x, gamma, mean, var -> dx, dgamma, dbeta
        runner_.set(DNNL_ARG_DIFF_DST, in(0));
        runner_.set(DNNL_ARG_SRC, in(1));
        runner_.set(DNNL_ARG_SCALE, params_[0].read(ctx.inputs[2]));
        // oneDNN's backward asks for a shift argument although no gradient depends on beta;
        // it gets gamma's (already converted) values.
        runner_.set(DNNL_ARG_SHIFT, params_[0].last());
        runner_.set(DNNL_ARG_MEAN, params_[1].read(ctx.inputs[3]));
        runner_.set(DNNL_ARG_VARIANCE, params_[2].read(ctx.inputs[4]));
        runner_.set(DNNL_ARG_DIFF_SRC, out(0));
        runner_.set(DNNL_ARG_DIFF_SCALE, params_[3].write(ctx.outputs[1]));
        runner_.set(DNNL_ARG_DIFF_SHIFT, params_[4].write(ctx.outputs[2]));
        runner_.execute();
        params_[3].finish(ctx.outputs[1]);
        params_[4].finish(ctx.outputs[2]);
        break;
    }
  }

 private:
  BnKind kind_;
  PrimitiveRunner runner_;
  std::vector<ChannelVector> params_;
};

void add_batch_norm_candidate(kernels::KernelRegistry& r, std::string_view op, BnKind kind) {
  kernels::KernelCandidate c;
  c.name = "onednn";
  c.dtypes = {DType::kF32, DType::kBF16};
  c.priority = kOneDnnPriority;
  c.decline = [kind](const kernels::KernelSignature& sig) -> std::string {
    for (const auto& t : sig.inputs) {
      if (std::string why = dtype_support(t.dtype); !why.empty()) return why;
    }
    if (std::string why = nonempty(sig); !why.empty()) return why;
    if (kind != BnKind::kInference && sig.attrs->get_string("activation") != "none")
      return std::string("a folded activation (the vectorized kernel runs it)");
    if (kind == BnKind::kTraining && sig.inputs.size() > 3)
      return std::string("a residual input (the vectorized kernel runs it)");
    const TensorType& x = sig.inputs[kind == BnKind::kGrad ? 1 : 0];
    if (x.shape.rank() < 2) return "x needs a batch axis before the channels";
    float eps = static_cast<float>(sig.attrs->get_float("epsilon"));
    return try_build([&] {
      if (kind == BnKind::kGrad) {
        backward_pd(x, eps);
      } else {
        forward_pd(x, eps, kind == BnKind::kTraining);
      }
    });
  };
  c.create = [kind](const kernels::KernelSignature& sig) {
    return make_kernel<BatchNormKernel>(sig, kind);
  };
  r.add(op, std::move(c));
}

}  // namespace

void register_onednn_batch_norm(kernels::KernelRegistry& r) {
  initialize_onednn();
  add_batch_norm_candidate(r, "batch_norm_training", BnKind::kTraining);
  add_batch_norm_candidate(r, "batch_norm_inference", BnKind::kInference);
  add_batch_norm_candidate(r, "batch_norm_grad", BnKind::kGrad);
}

}  // namespace tern::cpu
