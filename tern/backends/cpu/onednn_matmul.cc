// oneDNN matmul and fused_matmul: matmul(a, b) with transposes expressed as strides and NumPy
// batch broadcasting (oneDNN broadcasts a batch dim of size 1); fused_matmul adds the bias in the
// primitive and the residual (sum post-op) and activation (eltwise post-op; relu runs after the
// primitive, keeping NaN) in its epilogue. The primitive is built once per node; a run only points
// the memories at the tensors and executes.
#include <cstdlib>
#include <string_view>

#include "tern/backends/cpu/cpu_backend.h"
#include "tern/backends/cpu/cpu_kernels.h"
#include "tern/backends/cpu/onednn_common.h"
#include "tern/backends/cpu/onednn_kernels.h"

namespace tern::cpu {
namespace {

using namespace onednn;

// Memory descs of one matmul: `a` and `b` carry the transposes in their strides and have the
// output's rank (missing leading batch dims are 1, which oneDNN broadcasts).
struct MatmulDescs {
  dnnl::memory::desc a, b, bias, c;
};

// Logical dims [1.., batch.., rows, cols] of a stored operand, with strides of its row-major
// storage; `transposed` swaps the last two logical dims.
dnnl::memory::desc operand_desc(const TensorType& t, bool transposed, int rank, DType dtype) {
  const auto& dims = t.shape.dims();
  int r = t.shape.rank();
  dnnl_dims stored_strides(r, 1);
  for (int i = r - 2; i >= 0; --i) stored_strides[i] = stored_strides[i + 1] * dims[i + 1];
  dnnl_dims ldims(rank, 1), lstrides(rank, t.shape.num_elements());
  for (int i = 0; i < r; ++i) {
    ldims[rank - r + i] = dims[i];
    lstrides[rank - r + i] = stored_strides[i];
  }
  if (transposed) {
    std::swap(ldims[rank - 1], ldims[rank - 2]);
    std::swap(lstrides[rank - 1], lstrides[rank - 2]);
  }
  return dnnl::memory::desc(ldims, to_dnnl(dtype), lstrides);
}

// The descs of `sig`, or with `widen` of its f32 form (every bf16 tensor as f32).
MatmulDescs matmul_descs(const kernels::KernelSignature& sig, const Epilogue& ep, bool widen) {
  auto dtype = [widen](DType d) { return widen ? DType::kF32 : d; };
  const TensorType& c = sig.outputs[0];
  int rank = c.shape.rank();
  MatmulDescs d;
  d.a = operand_desc(sig.inputs[0], sig.attrs->get_bool("transpose_a"), rank,
                     dtype(sig.inputs[0].dtype));
  d.b = operand_desc(sig.inputs[1], sig.attrs->get_bool("transpose_b"), rank,
                     dtype(sig.inputs[1].dtype));
  d.c = dense_desc(to_dims(c.shape), dtype(c.dtype));
  if (ep.bias_input >= 0) {
    dnnl_dims bias_dims(rank, 1);
    bias_dims[rank - 1] = c.shape[rank - 1];
    d.bias = dense_desc(bias_dims, dtype(sig.inputs[ep.bias_input].dtype));
  }
  return d;
}

dnnl::matmul::primitive_desc matmul_pd(const kernels::KernelSignature& sig, const Epilogue& ep,
                                       bool widen) {
  MatmulDescs d = matmul_descs(sig, ep, widen);
  return dnnl::matmul::primitive_desc(dnnl::matmul::desc(d.a, d.b, d.bias, d.c),
                                      make_attr(epilogue_post_ops(ep)), engine());
}

std::string matmul_decline(const kernels::KernelSignature& sig, const Epilogue& ep, bool widen) {
  for (const auto& t : sig.inputs) {
    if (widen && t.dtype != DType::kBF16 && t.dtype != DType::kF32) {
      return str_cat("widening to f32 is for bf16 operands, not ", dtype_name(t.dtype));
    }
    if (std::string why = dtype_support(t.dtype); !why.empty()) return why;
  }
  if (widen && sig.inputs[0].dtype != DType::kBF16) return "the operands are not bf16";
  if (std::string why = nonempty(sig); !why.empty()) return why;
  if (sig.outputs[0].shape.rank() > DNNL_MAX_NDIMS) {
    return str_cat("rank ", sig.outputs[0].shape.rank(), " above oneDNN's ", DNNL_MAX_NDIMS);
  }
  if (std::string why = epilogue_support(sig, ep); !why.empty()) return why;
  return try_build([&] { matmul_pd(sig, ep, widen); });
}

// A bf16 tensor's widening to f32 (or an f32 result's rounding to bf16): a flat conversion.
Reorder conversion(const TensorType& t, DType from, DType to) {
  dnnl_dims n{t.shape.num_elements()};
  return Reorder(dense_desc(n, from), dense_desc(n, to));
}

class MatmulKernel {
 public:
  MatmulKernel(const kernels::KernelSignature& sig, Epilogue ep, bool widen) : ep_(std::move(ep)) {
    guarded(str_cat("oneDNN ", sig.to_string()), [&] {
      auto pd = matmul_pd(sig, ep_, widen);
      runner_.init<dnnl::matmul>(pd);
      runner_.add_arg(DNNL_ARG_SRC, pd.src_desc());
      runner_.add_arg(DNNL_ARG_WEIGHTS, pd.weights_desc());
      runner_.add_arg(DNNL_ARG_DST, pd.dst_desc());
      if (ep_.bias_input >= 0) runner_.add_arg(DNNL_ARG_BIAS, pd.bias_desc());
      if (!widen) return;
      for (int i : {0, 1}) {
        widen_[i] = conversion(sig.inputs[i], DType::kBF16, DType::kF32);
        widened_bytes_[i] = static_cast<size_t>(sig.inputs[i].shape.num_elements()) * sizeof(float);
      }
      const TensorType& c = sig.outputs[0];
      if (c.dtype == DType::kBF16) {
        result_bytes_ = static_cast<size_t>(c.shape.num_elements()) * sizeof(float);
        round_ = conversion(c, DType::kF32, DType::kBF16);
        if (ep_.residual_input >= 0) residual_ = conversion(c, DType::kBF16, DType::kF32);
      }
      if (ep_.bias_input >= 0 && sig.inputs[ep_.bias_input].dtype == DType::kBF16) {
        const TensorType& bias = sig.inputs[ep_.bias_input];
        widen_bias_ = conversion(bias, DType::kBF16, DType::kF32);
        bias_ = AlignedBuffer(static_cast<size_t>(bias.shape.num_elements()) * sizeof(float));
      }
    });
  }

  void run(kernels::KernelContext& ctx) {
    load_residual(ep_, ctx);
    // With widen_: the operands in per-thread slots 0 and 1, an f32 result in slot 2.
    const void* operands[2];
    for (int i : {0, 1}) {
      operands[i] = ctx.inputs[i].raw_data();
      if (widen_[i].defined()) {
        void* f32 = layout_slot(i, widened_bytes_[i]);
        widen_[i].run(operands[i], f32);
        operands[i] = f32;
      }
    }
    const void* bias = ep_.bias_input >= 0 ? ctx.inputs[ep_.bias_input].raw_data() : nullptr;
    if (widen_bias_.defined()) {
      widen_bias_.run(bias, bias_.data());
      bias = bias_.data();
    }
    void* out = ctx.outputs[0].raw_data();
    void* dst = round_.defined() ? layout_slot(2, result_bytes_) : out;
    if (residual_.defined()) residual_.run(out, dst);  // the residual load_residual put there
    runner_.set(DNNL_ARG_SRC, operands[0]);
    runner_.set(DNNL_ARG_WEIGHTS, operands[1]);
    if (bias != nullptr) runner_.set(DNNL_ARG_BIAS, bias);
    runner_.set(DNNL_ARG_DST, dst);
    runner_.execute();
    if (round_.defined()) round_.run(dst, out);
    finish_epilogue(ep_, ctx);
  }

 private:
  Epilogue ep_;
  PrimitiveRunner runner_;
  // Widening only: the conversions (undefined where a tensor is already f32) and the buffers.
  Reorder widen_[2], widen_bias_, round_, residual_;
  size_t widened_bytes_[2] = {0, 0}, result_bytes_ = 0;
  AlignedBuffer bias_;
};

// Whether bf16 matmuls prefer the widened candidate, and why: TERN_BF16_MATMUL ("native" / "f32"),
// else whether oneDNN finds no AMX on this CPU. Read once.
struct Bf16MatmulChoice {
  bool widen = false, from_env = false;
};

const Bf16MatmulChoice& bf16_matmul_choice() {
  static const Bf16MatmulChoice choice = [] {
    Bf16MatmulChoice c;
    const char* v = std::getenv("TERN_BF16_MATMUL");
    if (v == nullptr || *v == '\0') {
      c.widen = dnnl::get_effective_cpu_isa() < dnnl::cpu_isa::avx512_core_amx;
      return c;
    }
    std::string_view s(v);
    TERN_CHECK_ARG(s == "native" || s == "f32", "TERN_BF16_MATMUL='", s,
                   "': expected native (oneDNN's bf16 kernels) or f32 (widened to f32)");
    c.widen = s == "f32";
    c.from_env = true;
    return c;
  }();
  return choice;
}

void add_matmul_candidate(kernels::KernelRegistry& r, std::string_view op, bool fused, bool widen) {
  auto epilogue = [fused](const kernels::KernelSignature& sig) {
    return fused ? fused_epilogue(*sig.attrs) : Epilogue{};
  };
  kernels::KernelCandidate c;
  c.name = widen ? "onednn_f32" : "onednn";
  c.dtypes =
      widen ? std::vector<DType>{DType::kBF16} : std::vector<DType>{DType::kF32, DType::kBF16};
  // The widened candidate sits just above or just below the native one.
  c.priority = widen ? kOneDnnPriority + (bf16_matmul_choice().widen ? 1 : -1) : kOneDnnPriority;
  c.decline = [epilogue, widen](const kernels::KernelSignature& sig) {
    return matmul_decline(sig, epilogue(sig), widen);
  };
  c.create = [epilogue, widen](const kernels::KernelSignature& sig) {
    return make_kernel<MatmulKernel>(sig, epilogue(sig), widen);
  };
  r.add(op, std::move(c));
}

}  // namespace

std::string bf16_matmul_mode() {
  if (!dtype_support(DType::kBF16).empty()) return "reference kernels (no AVX-512)";
  const Bf16MatmulChoice& c = bf16_matmul_choice();
  return str_cat(c.widen ? "widened to f32" : "bf16", c.from_env ? " (TERN_BF16_MATMUL)"
                                                      : c.widen  ? " (no AMX)"
                                                                 : " (AMX)");
}

void register_onednn_matmul(kernels::KernelRegistry& r) {
  initialize_onednn();
  for (bool widen : {false, true}) {
    add_matmul_candidate(r, "matmul", /*fused=*/false, widen);
    add_matmul_candidate(r, "fused_matmul", /*fused=*/true, widen);
  }
}

}  // namespace tern::cpu
