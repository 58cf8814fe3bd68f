// bf16 matmuls and convolutions widened to f32: a second candidate, "onednn_f32", for each op of
// the oneDNN matmul and convolution families. It widens the bf16 inputs to f32 (per-thread
// slots), runs that op's f32 "onednn" kernel on them and rounds the bf16 outputs back; f32
// outputs (a weight gradient's dfilter_dtype / out_dtype "f32") are written directly.
//
// Why: on a CPU without AMX, oneDNN 2.6's bf16 kernels are its avx512_core_bf16 ones (vdpbf16ps,
// or an emulation where AVX512_BF16 is missing too). How fast they are depends on the CPU's
// vdpbf16ps, not on its instruction set: an Emerald Rapids machine without AMX ran them at ~150
// GFLOP/s on a 2048^3 matmul and ~180 on a 3x3 convolution, against ~260 and 380-670 in f32
// (vdpbf16ps issues at half the FMA's rate there), while a Zen 5 machine ran the bf16 matmul at
// 805 GFLOP/s against 412 in f32 (bench/benchmarks_notes.md). So the native form runs with AMX or
// on AMD's CPUs with AVX512_BF16 (dot products at twice the f32 rate: bf16_dot_speedup,
// cpu_isa.h, measures it for `tern --version`), the widened one elsewhere, and where oneDNN would
// emulate bf16. Without AVX-512 oneDNN has no bf16 kernels and bf16 matmuls fell to the reference
// kernels (~1 GFLOP/s); the widened form runs there too, converting with tern's x86-64-v3 loops
// (oneDNN's reorder is a scalar loop on such CPUs; it converts only where tern's loops cannot run,
// under TERN_CPU_ISA=x86-64). The numbers agree: bf16 products are exact in f32 and both forms
// accumulate in f32, so the widened result is the f32 computation on the bf16 values, rounded once.
// TERN_BF16_CONTRACTIONS=native|f32 overrides the choice (read once).
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "tern/backends/cpu/cpu_backend.h"
#include "tern/backends/cpu/cpu_isa.h"
#include "tern/backends/cpu/cpu_kernels.h"
#include "tern/backends/cpu/elementwise_kernels.h"
#include "tern/backends/cpu/onednn_common.h"
#include "tern/backends/cpu/onednn_conv.h"
#include "tern/backends/cpu/onednn_kernels.h"

namespace tern::cpu {
namespace {

using namespace onednn;

struct Choice {
  bool widen = false, from_env = false;
  bool amx = false;
  bool amd_bf16 = false;  // an AMD CPU with AVX512_BF16 (no AMX)
};

// AMD's CPUs with AVX512_BF16 issue vdpbf16ps at the f32 FMA's rate: twice its FLOPs (measured
// on Zen 5: bf16_dot_speedup 2.0; Zen 4, the other such AMD CPU, is assumed alike, not measured).
// The choice is the CPU's, not a timing's: the bits of a bf16 matmul differ between the two forms,
// and a run (or the ranks of a data-parallel job) must not change form with the load of the moment
// (a rank measuring under 1.5 on a busy host broke dist_train_4's bitwise comparison once).
bool amd_with_bf16() {
  return cpu_is_amd() && __builtin_cpu_supports("avx512bf16");
}

const Choice& choice() {
  static const Choice c = [] {
    Choice r;
    const char* v = std::getenv("TERN_BF16_CONTRACTIONS");
    if (v == nullptr || *v == '\0') {
      const dnnl::cpu_isa isa = dnnl::get_effective_cpu_isa();
      r.amx = isa >= dnnl::cpu_isa::avx512_core_amx;
      r.amd_bf16 = !r.amx && isa >= dnnl::cpu_isa::avx512_core_bf16 && amd_with_bf16();
      r.widen = !r.amx && !r.amd_bf16;
      return r;
    }
    std::string_view s(v);
    TERN_CHECK_ARG(s == "native" || s == "f32", "TERN_BF16_CONTRACTIONS='", s,
                   "': expected native (oneDNN's bf16 kernels) or f32 (widened to f32)");
    r.widen = s == "f32";
    r.from_env = true;
    return r;
  }();
  return c;
}

// The per-thread slots of the widened tensors: after the ones the wrapped kernels use.
constexpr int kFirstSlot = kPatchesSlot + 2;
constexpr int kMaxTensors = kLayoutSlots - kFirstSlot;

// `sig` with every bf16 tensor as f32; no input counts as constant (the widened copy lives in a
// slot that other kernels reuse).
kernels::KernelSignature widened(const kernels::KernelSignature& sig) {
  kernels::KernelSignature w = sig;
  for (auto* types : {&w.inputs, &w.outputs}) {
    for (TensorType& t : *types) {
      if (t.dtype == DType::kBF16) t.dtype = DType::kF32;
    }
  }
  w.constant_inputs.clear();
  return w;
}

// The "onednn" candidate of `op` in `r` (registered before this family).
const kernels::KernelCandidate* native_candidate(const kernels::KernelRegistry& r,
                                                 std::string_view op) {
  for (const kernels::KernelCandidate* c : r.candidates(op, DeviceType::kCPU)) {
    if (c->name == "onednn") return c;
  }
  return nullptr;
}

std::string decline(const kernels::KernelRegistry& r, std::string_view op,
                    const kernels::KernelSignature& sig) {
  if (sig.inputs.size() + sig.outputs.size() > kMaxTensors) {
    return str_cat("more than ", kMaxTensors, " tensors");
  }
  const kernels::KernelCandidate* native = native_candidate(r, op);
  if (native == nullptr) return "no f32 oneDNN kernel";
  kernels::KernelSignature w = widened(sig);
  if (native->decline) {
    if (std::string why = native->decline(w); !why.empty()) return "f32: " + why;
  }
  return "";
}

// A flat conversion of a tensor's elements between bf16 and f32: tern's vectorized loop where
// the CPU runs x86-64-v3 (cpu_isa.h), else oneDNN's reorder (which is a scalar loop without
// AVX-512).
class Conversion {
 public:
  Conversion() = default;
  Conversion(const TensorType& t, DType from, DType to)
      : from_(from), to_(to), n_(t.shape.num_elements()) {
    if (cpu_isa() != CpuIsa::kX86_64_v3) {
      dnnl_dims n{n_};
      reorder_ = Reorder(dense_desc(n, from), dense_desc(n, to));
    }
    defined_ = true;
  }
  bool defined() const { return defined_; }
  // Bytes of the f32 form.
  size_t f32_bytes() const { return static_cast<size_t>(n_) * sizeof(float); }
  void run(const void* in, void* out) {
    if (reorder_.defined()) {
      reorder_.run(in, out);
    } else {
      convert_bf16_f32(in, from_, out, to_, n_);
    }
  }

 private:
  bool defined_ = false;
  DType from_ = DType::kBF16, to_ = DType::kF32;
  int64_t n_ = 0;
  Reorder reorder_;
};

class WidenedKernel {
 public:
  WidenedKernel(const kernels::KernelRegistry& r, std::string_view op,
                const kernels::KernelSignature& sig) {
    kernels::KernelSignature w = widened(sig);
    inner_ = native_candidate(r, op)->create(w);
    guarded(str_cat("oneDNN conversions of ", sig.to_string()), [&] {
      for (size_t i = 0; i < sig.inputs.size(); ++i) {
        inputs_.push_back(widening(sig.inputs[i], DType::kBF16, DType::kF32));
      }
      for (size_t i = 0; i < sig.outputs.size(); ++i) {
        outputs_.push_back(widening(sig.outputs[i], DType::kF32, DType::kBF16));
      }
      in_.resize(sig.inputs.size());
      out_.resize(sig.outputs.size());
    });
  }

  void run(kernels::KernelContext& ctx) {
    int slot = kFirstSlot;
    for (size_t i = 0; i < in_.size(); ++i) {
      if (!inputs_[i].defined()) {
        in_[i] = ctx.inputs[i];
        continue;
      }
      void* f32 = layout_slot(slot++, inputs_[i].f32_bytes());
      inputs_[i].run(ctx.inputs[i].raw_data(), f32);
      wrap(in_[i], f32, ctx.inputs[i].shape(), inputs_[i].f32_bytes());
    }
    for (size_t i = 0; i < out_.size(); ++i) {
      if (!outputs_[i].defined()) {
        out_[i] = ctx.outputs[i];
        continue;
      }
      wrap(out_[i], layout_slot(slot++, outputs_[i].f32_bytes()), ctx.outputs[i].shape(),
           outputs_[i].f32_bytes());
    }
    kernels::KernelContext inner{in_, out_, ctx.attrs, ctx.stream};
    inner_->run(inner);
    for (size_t i = 0; i < out_.size(); ++i) {
      if (outputs_[i].defined()) outputs_[i].run(out_[i].raw_data(), ctx.outputs[i].raw_data());
    }
    // The caller's tensors are not held past the run (the slots' views are kept).
    for (size_t i = 0; i < in_.size(); ++i) {
      if (!inputs_[i].defined()) in_[i] = Tensor();
    }
    for (size_t i = 0; i < out_.size(); ++i) {
      if (!outputs_[i].defined()) out_[i] = Tensor();
    }
  }

 private:
  // `view` as an f32 tensor over a slot, made again only when the slot moved (it grew, or the
  // kernel runs on another thread): no allocation per run.
  static void wrap(Tensor& view, void* slot, const Shape& shape, size_t bytes) {
    if (view.defined() && view.raw_data() == slot) return;
    view = Tensor(DType::kF32, shape, Storage::wrap(slot, bytes));
  }

  // Undefined where the tensor is not bf16.
  static Conversion widening(const TensorType& t, DType from, DType to) {
    return t.dtype == DType::kBF16 ? Conversion(t, from, to) : Conversion();
  }

  std::unique_ptr<kernels::Kernel> inner_;
  std::vector<Conversion> inputs_, outputs_;
  std::vector<Tensor> in_, out_;  // what the f32 kernel runs on
};

}  // namespace

void register_onednn_widened(kernels::KernelRegistry& r) {
  initialize_onednn();
  for (std::string_view op : {"matmul", "fused_matmul", "conv2d", "fused_conv2d",
                              "conv2d_backprop_input", "conv2d_backprop_filter"}) {
    kernels::KernelCandidate c;
    c.name = "onednn_f32";
    c.dtypes = {DType::kBF16};
    // Just above or just below the native candidate.
    c.priority = kOneDnnPriority + (choice().widen ? 1 : -1);
    const kernels::KernelRegistry* registry = &r;
    std::string name(op);
    c.decline = [registry, name](const kernels::KernelSignature& sig) {
      return decline(*registry, name, sig);
    };
    c.create = [registry, name](const kernels::KernelSignature& sig) {
      return make_kernel<WidenedKernel>(*registry, name, sig);
    };
    r.add(op, std::move(c));
  }
}

bool onednn::bf16_native_on_amd() {
  return choice().amd_bf16;
}

bool bf16_contractions_widened() {
  return !dtype_support(DType::kBF16).empty() || choice().widen;
}

std::string bf16_contractions_mode() {
  // Without AVX-512 oneDNN has no bf16 kernels: widening is the only fast form.
  if (!dtype_support(DType::kBF16).empty()) return "widened to f32 (no AVX-512)";
  const Choice& c = choice();
  const char* form = c.widen ? "widened to f32" : "bf16";
  if (c.from_env) return str_cat(form, " (TERN_BF16_CONTRACTIONS)");
  if (c.amx) return str_cat(form, " (AMX)");
  const double speedup = bf16_dot_speedup();  // measured here, for the record only
  if (speedup == 0) return str_cat(form, " (no AMX, no AVX512_BF16)");
  char rate[16];
  std::snprintf(rate, sizeof rate, "%.1f", speedup);
  return str_cat(form, c.amd_bf16 ? " (AMD, no AMX" : " (no AMX", "; AVX512_BF16 dot products at ",
                 rate, "x the f32 FLOP rate)");
}

}  // namespace tern::cpu
