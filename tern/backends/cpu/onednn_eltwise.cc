// oneDNN eltwise kernels for the unary ops where oneDNN's JIT beats the vectorized loops of
// elementwise_unary.cc (measured on the target CPU; the table below lists only those), forward
// and the matching *_grad(dy, x) helper. Tensors are viewed as one dense vector.
#include <vector>

#include "tern/backends/cpu/cpu_isa.h"
#include "tern/backends/cpu/cpu_kernels.h"
#include "tern/backends/cpu/onednn_common.h"
#include "tern/backends/cpu/onednn_kernels.h"

namespace tern::cpu {
namespace {

using namespace onednn;

struct EltwiseSpec {
  std::string_view op;
  bool backward = false;  // op(dy, x) -> dx
  dnnl::algorithm algorithm;
  // Why the vectorized loop should run these attributes instead ("" = take them).
  std::string (*leave_to_vec)(const ops::Attrs& attrs) = nullptr;
  // The dtypes oneDNN claims on CPUs with AVX-512 (cpu_runs_v4_variants()): AMD's and the
  // others (Intel's); the vectorized loop's AVX-512 build runs the rest there. Without AVX-512
  // oneDNN claims both.
  std::vector<DType> amd_dtypes = {DType::kF32, DType::kBF16};
  std::vector<DType> intel_dtypes = {DType::kF32, DType::kBF16};
};

// gelu's erf form: oneDNN's JIT erf ran about 2x faster than the vectorized loop before that
// loop had an AVX-512 build (f32 and bf16, forward and grad, 6.4M elements on 2 cores of an
// Emerald Rapids), and still claims both dtypes where that build cannot run; with AVX-512, the
// dtypes by CPU below (claimed_dtypes). The tanh form and the other unary ops (relu, exp, log,
// sqrt, tanh, sigmoid and their grads) are memory-bound and run as fast either way.
std::string gelu_tanh_to_vec(const ops::Attrs& attrs) {
  return attrs.get_bool("approximate") ? "the vectorized loop is as fast for gelu's tanh form" : "";
}

// On AMD's Zen 5 the vectorized loop's AVX-512 build wins gelu_grad's erf form in f32 and bf16
// and the f32 forward ([4096, 1024] on 2 cores, with its one-exp derivative: f32 gelu_grad 0.87
// against oneDNN's 2.0-2.2 ms (session 21), bf16 1.09 against 1.35, f32 gelu 0.84 against
// 0.90-1.08); oneDNN keeps the bf16 forward (0.82 against 0.99 ms). On an Emerald Rapids (no AMX)
// it wins the f32 pair and loses the bf16 one (session 37, `kernel_ab_bench --kernels
// vec,onednn --runs 40`, [4096, 1024], 2 threads, 3 interleaved rounds: f32 gelu 1.83-1.97
// against 1.99-2.16 ms, f32 gelu_grad 2.23-2.39 against 2.68-2.78; bf16 gelu 2.60-2.76 against
// 2.19-2.22, bf16 gelu_grad 2.25-3.88 against 1.96-3.05). A rule by CPU, not a timing
// (cpu_is_amd()), so every run and rank on one kind of CPU computes the same bits.
const std::vector<DType>& claimed_dtypes(const EltwiseSpec& spec) {
  static const std::vector<DType> both = {DType::kF32, DType::kBF16};
  if (!cpu_runs_v4_variants()) return both;
  return cpu_is_amd() ? spec.amd_dtypes : spec.intel_dtypes;
}

const std::vector<EltwiseSpec>& eltwise_table() {
  static const std::vector<EltwiseSpec> table = {
      {"gelu",
       false,
       dnnl::algorithm::eltwise_gelu_erf,
       gelu_tanh_to_vec,
       {DType::kBF16},
       {DType::kBF16}},
      {"gelu_grad", true, dnnl::algorithm::eltwise_gelu_erf, gelu_tanh_to_vec, {}, {DType::kBF16}},
  };
  return table;
}

dnnl::memory::desc flat_desc(const TensorType& t) {
  return dense_desc({t.shape.num_elements()}, t.dtype);
}

dnnl::eltwise_forward::primitive_desc forward_pd(const kernels::KernelSignature& sig,
                                                 const EltwiseSpec& spec) {
  dnnl::memory::desc md = flat_desc(sig.inputs[spec.backward ? 1 : 0]);
  dnnl::eltwise_forward::desc desc(dnnl::prop_kind::forward_training, spec.algorithm, md, 0.0f,
                                   0.0f);
  return dnnl::eltwise_forward::primitive_desc(desc, make_attr(), engine());
}

dnnl::eltwise_backward::primitive_desc backward_pd(const kernels::KernelSignature& sig,
                                                   const EltwiseSpec& spec) {
  dnnl::memory::desc md = flat_desc(sig.inputs[1]);
  dnnl::eltwise_backward::desc desc(spec.algorithm, md, md, 0.0f, 0.0f);
  return dnnl::eltwise_backward::primitive_desc(desc, make_attr(), engine(), forward_pd(sig, spec));
}

class EltwiseKernel {
 public:
  EltwiseKernel(const kernels::KernelSignature& sig, const EltwiseSpec& spec)
      : backward_(spec.backward) {
    guarded(str_cat("oneDNN ", sig.to_string()), [&] {
      if (backward_) {
        auto pd = backward_pd(sig, spec);
        runner_.init<dnnl::eltwise_backward>(pd);
        runner_.add_arg(DNNL_ARG_DIFF_DST, pd.diff_dst_desc());
        runner_.add_arg(DNNL_ARG_SRC, pd.diff_dst_desc());
        runner_.add_arg(DNNL_ARG_DIFF_SRC, pd.diff_src_desc());
      } else {
        auto pd = forward_pd(sig, spec);
        runner_.init<dnnl::eltwise_forward>(pd);
        runner_.add_arg(DNNL_ARG_SRC, pd.src_desc());
        runner_.add_arg(DNNL_ARG_DST, pd.dst_desc());
      }
    });
  }

  void run(kernels::KernelContext& ctx) {
    if (backward_) {
      runner_.set(DNNL_ARG_DIFF_DST, ctx.inputs[0].raw_data());
      runner_.set(DNNL_ARG_SRC, ctx.inputs[1].raw_data());
      runner_.set(DNNL_ARG_DIFF_SRC, ctx.outputs[0].raw_data());
    } else {
      runner_.set(DNNL_ARG_SRC, ctx.inputs[0].raw_data());
      runner_.set(DNNL_ARG_DST, ctx.outputs[0].raw_data());
    }
    runner_.execute();
  }

 private:
  bool backward_;
  PrimitiveRunner runner_;
};

void add_eltwise_candidate(kernels::KernelRegistry& r, const EltwiseSpec& spec) {
  kernels::KernelCandidate c;
  c.name = "onednn";
  c.dtypes = claimed_dtypes(spec);
  if (c.dtypes.empty()) return;
  c.priority = kOneDnnPriority;
  c.decline = [spec](const kernels::KernelSignature& sig) -> std::string {
    for (const auto& t : sig.inputs) {
      if (std::string why = dtype_support(t.dtype); !why.empty()) return why;
    }
    if (std::string why = nonempty(sig); !why.empty()) return why;
    if (spec.leave_to_vec) {
      if (std::string why = spec.leave_to_vec(*sig.attrs); !why.empty()) return why;
    }
    return try_build([&] {
      if (spec.backward) {
        backward_pd(sig, spec);
      } else {
        forward_pd(sig, spec);
      }
    });
  };
  c.create = [spec](const kernels::KernelSignature& sig) {
    return make_kernel<EltwiseKernel>(sig, spec);
  };
  r.add(spec.op, std::move(c));
}

}  // namespace

void register_onednn_eltwise(kernels::KernelRegistry& r) {
  initialize_onednn();
  for (const EltwiseSpec& spec : eltwise_table()) add_eltwise_candidate(r, spec);
}

}  // namespace tern::cpu
