// oneDNN matmul and fused_matmul: matmul(a, b) with transposes expressed as strides and NumPy
// batch broadcasting (oneDNN broadcasts a batch dim of size 1); fused_matmul adds the bias in the
// primitive and the residual (sum post-op) and activation (eltwise post-op; relu runs after the
// primitive, keeping NaN) in its epilogue. The primitive is built once per node; a run only points
// the memories at the tensors and executes. A plain 2-D a^T b whose a is much deeper than wide
// runs as b^T a and a transposing reorder (swaps_transposed_a); a constant b is kept in the
// primitive's layout (packs_constant_b).
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
dnnl::memory::desc operand_desc(const TensorType& t, bool transposed, int rank) {
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
  return dnnl::memory::desc(ldims, to_dnnl(t.dtype), lstrides);
}

MatmulDescs matmul_descs(const kernels::KernelSignature& sig, const Epilogue& ep) {
  const TensorType& c = sig.outputs[0];
  int rank = c.shape.rank();
  MatmulDescs d;
  d.a = operand_desc(sig.inputs[0], sig.attrs->get_bool("transpose_a"), rank);
  d.b = operand_desc(sig.inputs[1], sig.attrs->get_bool("transpose_b"), rank);
  d.c = dense_desc(to_dims(c.shape), c.dtype);
  if (ep.bias_input >= 0) {
    dnnl_dims bias_dims(rank, 1);
    bias_dims[rank - 1] = c.shape[rank - 1];
    d.bias = dense_desc(bias_dims, sig.inputs[ep.bias_input].dtype);
  }
  return d;
}

// packed_b: b in the layout the primitive prefers (format `any`), for a constant b reordered once.
dnnl::matmul::primitive_desc matmul_pd(const kernels::KernelSignature& sig, const Epilogue& ep,
                                       bool packed_b = false) {
  MatmulDescs d = matmul_descs(sig, ep);
  if (packed_b) d.b = dnnl::memory::desc(d.b.dims(), d.b.data_type(), dnnl_tag::any);
  return dnnl::matmul::primitive_desc(dnnl::matmul::desc(d.a, d.b, d.bias, d.c),
                                      make_attr(epilogue_post_ops(ep)), engine());
}

// A constant 2-D b (a served model's dense weight, its bytes fixed: input_is_constant) is kept in
// the primitive's blocked layout, reordered at the first run, instead of packed by the primitive
// at every call: the CNN's [1, 1600] x [1600, 128] at batch 1, 2 threads (Zen 5, a standalone
// oneDNN 2.6.3 program, medians of 3000 calls) 6.2-6.4 -> 4.3-4.5 us; one thread 10.7 -> 7.8 us.
bool packs_constant_b(const kernels::KernelSignature& sig) {
  return sig.input_is_constant(1) && sig.inputs[0].shape.rank() == 2 &&
         sig.inputs[1].shape.rank() == 2;
}

std::string matmul_decline(const kernels::KernelSignature& sig, const Epilogue& ep) {
  for (const auto& t : sig.inputs) {
    if (std::string why = dtype_support(t.dtype); !why.empty()) return why;
  }
  if (std::string why = nonempty(sig); !why.empty()) return why;
  if (sig.outputs[0].shape.rank() > DNNL_MAX_NDIMS) {
    return str_cat("rank ", sig.outputs[0].shape.rank(), " above oneDNN's ", DNNL_MAX_NDIMS);
  }
  if (std::string why = epilogue_support(sig, ep); !why.empty()) return why;
  return try_build([&] { matmul_pd(sig, ep); });
}

// C = a^T b with a [K, M], b [K, N] (a weight gradient: x^T dy): oneDNN 2.6's brgemm reads a
// transposed `a` slowly when it is deep (K >= 4 M) and C is wider than tall (M < N); C^T = b^T a
// (the wider side as rows) then a transposing reorder is faster. Measured on Zen 5, 2 cores, f32
// (kernel_ab_bench, the node against the swapped graph): K 4096, M 256, N 1024 (W6's FFN weight
// gradient) 5.8-6.3 -> 5.1-5.5 ms; K 2048: 3.1 -> 2.4; K 1024: 1.43-1.48 -> 1.19-1.22; K 4096,
// M 128, N 512: 1.50-1.55 -> 1.34-1.37; bf16 at K 4096, M 256, N 1024: 3.03-3.15 -> 2.84-2.93.
// Not where K < 4 M: K 128, M 784, N 1024 (W1) 0.43-0.45 -> 0.55; K 512, M 1024, N 4096 10.2-10.7
// against 10.6-10.8. Plain matmul only (no epilogue), both operands 2-D. Measured on Zen 5 only;
// the rule is the kernel's, not the CPU's (the same form everywhere).
bool swaps_transposed_a(const kernels::KernelSignature& sig, const Epilogue& ep) {
  if (ep.bias_input >= 0 || ep.residual_input >= 0 || ep.activation != ops::Activation::kNone) {
    return false;
  }
  const Shape &a = sig.inputs[0].shape, &b = sig.inputs[1].shape;
  if (a.rank() != 2 || b.rank() != 2 || !sig.attrs->get_bool("transpose_a") ||
      sig.attrs->get_bool("transpose_b")) {
    return false;
  }
  const int64_t k = a[0], m = a[1], n = b[1];
  return m < n && k >= 4 * m;
}

// The primitive of a swapped a^T b: C^T [N, M] = b^T a.
dnnl::matmul::primitive_desc swapped_pd(const kernels::KernelSignature& sig) {
  const TensorType& c = sig.outputs[0];
  return dnnl::matmul::primitive_desc(
      dnnl::matmul::desc(operand_desc(sig.inputs[1], true, 2),
                         operand_desc(sig.inputs[0], false, 2),
                         dense_desc({c.shape[1], c.shape[0]}, c.dtype)),
      make_attr(), engine());
}

class MatmulKernel {
 public:
  MatmulKernel(const kernels::KernelSignature& sig, Epilogue ep) : ep_(std::move(ep)) {
    guarded(str_cat("oneDNN ", sig.to_string()), [&] {
      const bool swapped = swaps_transposed_a(sig, ep_);
      const bool packed = !swapped && packs_constant_b(sig);
      auto pd = swapped ? swapped_pd(sig) : matmul_pd(sig, ep_, packed);
      if (packed) weights_ = WeightsReorder(matmul_descs(sig, ep_).b, pd.weights_desc(), true);
      runner_.init<dnnl::matmul>(pd);
      runner_.add_arg(DNNL_ARG_SRC, pd.src_desc());
      runner_.add_arg(DNNL_ARG_WEIGHTS, pd.weights_desc());
      runner_.add_arg(DNNL_ARG_DST, pd.dst_desc());
      if (ep_.bias_input >= 0) runner_.add_arg(DNNL_ARG_BIAS, pd.bias_desc());
      if (swapped) {  // C^T lands in the per-thread GEMM result slot, then transpose_ makes C
        const TensorType& c = sig.outputs[0];
        const int64_t m = c.shape[0], n = c.shape[1];
        transpose_ = Reorder(dnnl::memory::desc({m, n}, to_dnnl(c.dtype), dnnl::memory::dims{1, m}),
                             dense_desc({m, n}, c.dtype));
        swapped_bytes_ = pd.dst_desc().get_size();
      }
    });
  }

  void run(kernels::KernelContext& ctx) {
    if (swapped_bytes_ > 0) {
      void* ct = layout_slot(kGemmResultSlot, swapped_bytes_);
      runner_.set(DNNL_ARG_SRC, ctx.inputs[1].raw_data());
      runner_.set(DNNL_ARG_WEIGHTS, ctx.inputs[0].raw_data());
      runner_.set(DNNL_ARG_DST, ct);
      runner_.execute();
      transpose_.run(ct, ctx.outputs[0].raw_data());
      return;
    }
    load_residual(ep_, ctx);
    runner_.set(DNNL_ARG_SRC, ctx.inputs[0].raw_data());
    runner_.set(DNNL_ARG_WEIGHTS, weights_.to_primitive_kept(ctx.inputs[1].raw_data()));
    if (ep_.bias_input >= 0) runner_.set(DNNL_ARG_BIAS, ctx.inputs[ep_.bias_input].raw_data());
    runner_.set(DNNL_ARG_DST, ctx.outputs[0].raw_data());
    runner_.execute();
    finish_epilogue(ep_, ctx);
  }

 private:
  Epilogue ep_;
  PrimitiveRunner runner_;
  WeightsReorder weights_;    // a constant b in the primitive's layout (packs_constant_b)
  size_t swapped_bytes_ = 0;  // > 0: runs as C^T = b^T a, then transpose_
  Reorder transpose_;
};

void add_matmul_candidate(kernels::KernelRegistry& r, std::string_view op, bool fused) {
  auto epilogue = [fused](const kernels::KernelSignature& sig) {
    return fused ? fused_epilogue(*sig.attrs) : Epilogue{};
  };
  kernels::KernelCandidate c;
  c.name = "onednn";
  c.dtypes = {DType::kF32, DType::kBF16};
  c.priority = kOneDnnPriority;
  c.decline = [epilogue](const kernels::KernelSignature& sig) {
    return matmul_decline(sig, epilogue(sig));
  };
  c.create = [epilogue](const kernels::KernelSignature& sig) {
    return make_kernel<MatmulKernel>(sig, epilogue(sig));
  };
  r.add(op, std::move(c));
}

}  // namespace

void register_onednn_matmul(kernels::KernelRegistry& r) {
  initialize_onednn();
  add_matmul_candidate(r, "matmul", /*fused=*/false);
  add_matmul_candidate(r, "fused_matmul", /*fused=*/true);
}

}  // namespace tern::cpu
