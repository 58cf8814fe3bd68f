// oneDNN plumbing shared by the oneDNN kernels: the one engine and stream, dtype and shape
// conversion, activation post-ops, the shared scratchpad, and PrimitiveRunner (a primitive built
// once whose argument memories get new data handles every run). Included only by
// tern/backends/cpu/*.cc: the oneDNN header never leaves this folder.
#pragma once

#include <oneapi/dnnl/dnnl.hpp>

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "tern/kernels/kernel.h"
#include "tern/ops/fused_program.h"

namespace tern::cpu::onednn {

using dnnl_dt = dnnl::memory::data_type;
using dnnl_tag = dnnl::memory::format_tag;
using dnnl_dims = dnnl::memory::dims;

// The process-wide CPU engine and its in-order stream (created on first use).
const dnnl::engine& engine();
dnnl::stream& stream();

// One-time setup: OpenMP threads = available cores unless the user chose a count.
void initialize_onednn();

// "" if oneDNN kernels handle `dtype` on this CPU (f32 always, bf16 with AVX-512), else why not.
std::string dtype_support(DType dtype);
dnnl_dt to_dnnl(DType dtype);
dnnl_dims to_dims(const Shape& shape);
// "" if no dim is zero, else "empty tensors are left to other kernels".
std::string nonempty(const kernels::KernelSignature& sig);

// A memory desc for `dims` with row-major strides (dense, like every tern tensor).
dnnl::memory::desc dense_desc(const dnnl_dims& dims, DType dtype);

// The oneDNN eltwise algorithm of an epilogue activation (a table indexed by ops::Activation;
// nullopt for kNone, and for any activation oneDNN has no post-op for).
std::optional<dnnl::algorithm> activation_algorithm(ops::Activation activation);
// "" if the activation has a post-op (or is kNone), else the reason.
std::string activation_support(ops::Activation activation);
// Appends the eltwise post-op for `activation` (nothing for kNone).
void append_activation(dnnl::post_ops& ops, ops::Activation activation);

// The epilogue of fused_matmul / fused_conv2d: y = act(op(...) + bias + residual). The bias goes
// into the primitive, the residual is a sum post-op over a destination pre-filled with it, the
// activation an eltwise post-op.
struct Epilogue {
  int bias_input = -1;      // input index of bias [c_out], -1 = none
  int residual_input = -1;  // input index of residual (the output's type), -1 = none
  ops::Activation activation = ops::Activation::kNone;
};
// From attributes has_bias, has_residual, activation (inputs: 2 operands, bias, residual).
Epilogue fused_epilogue(const ops::Attrs& attrs);
// For tern's own row-product kernels (matmul_bf16_cpu.cc, matmul_f32_cpu.cc): a matmul, or a
// fused_matmul whose epilogue is at most a bias of rank 1. "" and the bias's input index (-1
// without one) in *bias_input, or why not.
std::string bias_only_epilogue(const kernels::KernelSignature& sig, int* bias_input);
// Why the epilogue can't run on oneDNN ("" = it can).
std::string epilogue_support(const kernels::KernelSignature& sig, const Epilogue& ep);
// The residual's sum post-op and the activation's eltwise post-op, except relu: oneDNN's relu
// post-op is max(x, 0), which turns NaN into 0 where ref keeps it (bad-input report F1), so relu
// runs after the primitive (finish_epilogue).
dnnl::post_ops epilogue_post_ops(const Epilogue& ep);
// Before executing: copies the residual into the output (unless they share memory).
void load_residual(const Epilogue& ep, kernels::KernelContext& ctx);
// After executing (output in the user's layout): the part of the epilogue not in the post-ops.
void finish_epilogue(const Epilogue& ep, kernels::KernelContext& ctx);

// An attr with user-managed scratchpad (PrimitiveRunner supplies the memory) and `ops`.
dnnl::primitive_attr make_attr(const dnnl::post_ops& ops = dnnl::post_ops());

// Why oneDNN refused: "oneDNN: <message>".
std::string describe(const dnnl::error& e);

// Runs `build` (which creates a primitive descriptor); "" on success, else why oneDNN refused.
template <typename Build>
std::string try_build(Build&& build) {
  try {
    build();
    return "";
  } catch (const dnnl::error& e) {
    return describe(e);
  }
}

// Runs `f`, rethrowing a dnnl::error as tern::Error(kInternal) naming `what`.
template <typename F>
decltype(auto) guarded(std::string_view what, F&& f) {
  try {
    return f();
  } catch (const dnnl::error& e) {
    throw_error(ErrorCode::kInternal, what, ": ", describe(e));
  }
}

// A primitive plus one memory object per argument. Data handles are set before each execute;
// the scratchpad (if any) comes from a per-thread buffer shared by every primitive.
class PrimitiveRunner {
 public:
  PrimitiveRunner() = default;
  // Builds `Primitive` from `pd`, which must have been created with make_attr() (user scratchpad).
  template <typename Primitive, typename PrimitiveDesc>
  void init(const PrimitiveDesc& pd) {
    init_impl(Primitive(pd), pd.scratchpad_desc());
  }
  // Declares argument `arg` with layout `md`; call once per argument after init().
  void add_arg(int arg, const dnnl::memory::desc& md);
  // Points argument `arg` at `data` for the next execute().
  void set(int arg, const void* data);
  void execute();

 private:
  void init_impl(dnnl::primitive prim, const dnnl::memory::desc& scratchpad_md);

  dnnl::primitive prim_;
  size_t scratchpad_bytes_ = 0;
  std::unordered_map<int, dnnl::memory> args_;
};

// `runner` as the matmul c = a b (accumulate: c += a b, a sum post-op) with its three arguments
// declared: the GEMMs of the convolutions run as matmuls (onednn_conv_gemm.cc,
// onednn_conv_winograd.cc, onednn_conv_valid_taps.cc).
void init_matmul(PrimitiveRunner& runner, const dnnl::memory::desc& a, const dnnl::memory::desc& b,
                 const dnnl::memory::desc& c, bool accumulate = false);

// A 64-byte aligned byte buffer owned by a kernel (e.g. weights in oneDNN's blocked layout).
class AlignedBuffer {
 public:
  AlignedBuffer() = default;
  explicit AlignedBuffer(size_t bytes);
  void* data() const { return data_.get(); }
  size_t size() const { return bytes_; }

 private:
  struct Free {
    void operator()(void* p) const;
  };
  std::unique_ptr<void, Free> data_;
  size_t bytes_ = 0;
};

// A reorder between two layouts of the same logical tensor, built once.
class Reorder {
 public:
  Reorder() = default;
  // accumulate: `to` += the reordered `from` (oneDNN's sum post-op) instead of `to` = it.
  Reorder(const dnnl::memory::desc& from, const dnnl::memory::desc& to, bool accumulate = false);
  bool defined() const { return defined_; }
  void run(const void* from, void* to);

 private:
  bool defined_ = false;
  dnnl::reorder prim_;
  dnnl::memory from_, to_;
};

// Moves weights (a convolution's HWIO filter, a matmul's b) between the user's layout and the
// layout a primitive chose; a no-op (`needed()` false) when they are the same.
class WeightsReorder {
 public:
  WeightsReorder() = default;
  // from_user: user -> primitive layout (forward, backward data); else primitive -> user.
  WeightsReorder(const dnnl::memory::desc& user, const dnnl::memory::desc& primitive,
                 bool from_user);
  bool needed() const { return reorder_.defined(); }
  // The buffer holding the weights in the primitive's layout (valid when needed()).
  void* buffer() const { return buffer_.data(); }
  // Forward direction: `user` -> buffer(); returns what the primitive should read.
  const void* to_primitive(const void* user);
  // The same for weights whose bytes never change (KernelSignature::input_is_constant): reorders
  // at the first call only, and again only if `user` is another buffer.
  const void* to_primitive_kept(const void* user);
  // Backward direction: buffer() -> `user`.
  void to_user(void* user);

 private:
  Reorder reorder_;
  AlignedBuffer buffer_;
  const void* kept_from_ = nullptr;  // the constant weights buffer() holds, reordered
};

// Per-thread scratch buffers shared by every kernel (runs are synchronous; a kernel uses
// distinct slots for what must coexist): slots 0-2 hold activations in a primitive's layout
// (ActivationReorder), kPatchesSlot and kGemmResultSlot the im2col patches and the GEMM result of
// the convolutions run as GEMMs (onednn_conv_gemm.cc; kPatchesSlot also holds the flipped filter
// of an input gradient run as a forward convolution); slots 5-10 the f32 forms of a widened
// kernel's bf16 tensors (onednn_widen.cc). A slot grows to the largest request.
constexpr int kLayoutSlots = 11;
constexpr int kPatchesSlot = 3, kGemmResultSlot = 4;
void* layout_slot(int slot, size_t bytes);

// Moves an activation between the user's layout (nhwc) and the one a primitive chose, through a
// per-thread scratch buffer `slot` (0-2) shared by every kernel (runs are synchronous; a kernel
// uses distinct slots for its arguments). needed() is false when the layouts match: then the
// primitive reads and writes the user's memory directly.
class ActivationReorder {
 public:
  ActivationReorder() = default;
  // add_to_user: to_user() adds the primitive's result to what the user's memory holds.
  ActivationReorder(const dnnl::memory::desc& user, const dnnl::memory::desc& primitive, int slot,
                    bool add_to_user = false);
  bool needed() const { return to_primitive_.defined(); }
  // The memory the primitive uses for this argument: the slot, or `user` when not needed.
  void* buffer(void* user) const;
  // user -> primitive layout (in the slot); returns buffer(user).
  void* to_primitive(const void* user);
  // primitive layout (the slot) -> user (+= with add_to_user).
  void to_user(void* user);

 private:
  Reorder to_primitive_, to_user_;
  int slot_ = 0;
  size_t bytes_ = 0;
};

// Wraps a kernel state object with a run function into a Kernel.
template <typename State>
class StateKernel final : public kernels::Kernel {
 public:
  explicit StateKernel(State state) : state_(std::move(state)) {}
  void run(kernels::KernelContext& ctx) override { state_.run(ctx); }

 private:
  State state_;
};

template <typename State, typename... Args>
std::unique_ptr<kernels::Kernel> make_kernel(Args&&... args) {
  return std::make_unique<StateKernel<State>>(State(std::forward<Args>(args)...));
}

}  // namespace tern::cpu::onednn
