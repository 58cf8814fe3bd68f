// oneDNN engine, stream, conversions, post-ops, scratchpad and PrimitiveRunner.
#include "tern/backends/cpu/onednn_common.h"

#include <algorithm>
#include <array>
#include <optional>

#include <omp.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>

#include "tern/backends/cpu/nan_guard.h"
#include "tern/base/thread_pool.h"

namespace tern::cpu::onednn {
namespace {

// The scratchpad shared by every primitive run on this thread (runs are synchronous, so one
// buffer suffices); it grows to the largest request and never shrinks.
struct Scratchpad {
  AlignedBuffer buffer;

  void* get(size_t need) {
    if (need > buffer.size()) buffer = AlignedBuffer(need);
    return buffer.data();
  }
};

Scratchpad& thread_scratchpad() {
  thread_local Scratchpad pad;
  return pad;
}

}  // namespace

void* layout_slot(int slot, size_t bytes) {
  thread_local Scratchpad slots[kLayoutSlots];
  return slots[slot].get(bytes);
}

const dnnl::engine& engine() {
  static const dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  return eng;
}

dnnl::stream& stream() {
  // Streams are cheap; one per thread keeps concurrent executables independent.
  thread_local dnnl::stream s(engine());
  return s;
}

void initialize_onednn() {
  static std::once_flag once;
  std::call_once(once, [] {
    // OpenMP's default is every online CPU; respect affinity (containers, taskset) instead, but
    // never override a count the user chose (OMP_NUM_THREADS or an earlier omp_set_num_threads).
    if (std::getenv("OMP_NUM_THREADS") == nullptr && omp_get_max_threads() == omp_get_num_procs()) {
      omp_set_num_threads(available_cores());
    }
  });
}

std::string dtype_support(DType dtype) {
  switch (dtype) {
    case DType::kF32:
      return "";
    case DType::kBF16:
      if (dnnl::get_effective_cpu_isa() < dnnl::cpu_isa::avx512_core) {
        return "bf16 needs AVX-512 on this CPU";
      }
      return "";
    default:
      return str_cat("dtype ", dtype_name(dtype), " not supported by oneDNN kernels");
  }
}

dnnl_dt to_dnnl(DType dtype) {
  switch (dtype) {
    case DType::kF32:
      return dnnl_dt::f32;
    case DType::kBF16:
      return dnnl_dt::bf16;
    case DType::kF16:
      return dnnl_dt::f16;
    case DType::kI8:
      return dnnl_dt::s8;
    case DType::kU8:
      return dnnl_dt::u8;
    case DType::kI32:
      return dnnl_dt::s32;
    default:
      break;
  }
  throw_error(ErrorCode::kInternal, "dtype ", dtype_name(dtype), " has no oneDNN data type");
}

dnnl_dims to_dims(const Shape& shape) {
  return dnnl_dims(shape.dims().begin(), shape.dims().end());
}

std::string nonempty(const kernels::KernelSignature& sig) {
  for (const auto& t : sig.inputs) {
    if (t.shape.num_elements() == 0) return "empty tensors are left to other kernels";
  }
  for (const auto& t : sig.outputs) {
    if (t.shape.num_elements() == 0) return "empty tensors are left to other kernels";
  }
  return "";
}

dnnl::memory::desc dense_desc(const dnnl_dims& dims, DType dtype) {
  dnnl_dims strides(dims.size(), 1);
  for (int i = static_cast<int>(dims.size()) - 2; i >= 0; --i) {
    strides[i] = strides[i + 1] * dims[i + 1];
  }
  return dnnl::memory::desc(dims, to_dnnl(dtype), strides);
}

namespace {

// The eltwise post-op of each epilogue activation, indexed by ops::Activation (kNone: none).
constexpr std::array<std::optional<dnnl::algorithm>, ops::kNumActivations> kActivationAlgorithm = {
    std::nullopt,                        // kNone
    dnnl::algorithm::eltwise_relu,       // kRelu
    dnnl::algorithm::eltwise_gelu_tanh,  // kGeluTanh
    dnnl::algorithm::eltwise_gelu_erf,   // kGeluErf
    dnnl::algorithm::eltwise_logistic,   // kSigmoid
    dnnl::algorithm::eltwise_tanh,       // kTanh
};

}  // namespace

std::optional<dnnl::algorithm> activation_algorithm(ops::Activation activation) {
  return kActivationAlgorithm[static_cast<size_t>(activation)];
}

std::string activation_support(ops::Activation activation) {
  if (activation == ops::Activation::kNone || activation_algorithm(activation)) return "";
  return str_cat("activation '", ops::activation_info(activation).name, "' has no oneDNN post-op");
}

void append_activation(dnnl::post_ops& ops, ops::Activation activation) {
  if (activation == ops::Activation::kNone) return;
  std::optional<dnnl::algorithm> alg = activation_algorithm(activation);
  if (!alg) throw_error(ErrorCode::kInvalidArgument, activation_support(activation));
  ops.append_eltwise(1.0f, *alg, 0.0f, 0.0f);
}

Epilogue fused_epilogue(const ops::Attrs& attrs) {
  bool has_bias = attrs.get_bool("has_bias");
  Epilogue ep;
  ep.bias_input = has_bias ? 2 : -1;
  ep.residual_input = attrs.get_bool("has_residual") ? (has_bias ? 3 : 2) : -1;
  ep.activation =
      ops::parse_activation(attrs.get_string("activation")).value_or(ops::Activation::kNone);
  return ep;
}

std::string bias_only_epilogue(const kernels::KernelSignature& sig, int* bias_input) {
  *bias_input = -1;
  if (sig.op->name != "fused_matmul") return "";
  const Epilogue ep = fused_epilogue(*sig.attrs);
  if (ep.residual_input >= 0 || ep.activation != ops::Activation::kNone) {
    return "an epilogue beyond a bias";
  }
  if (ep.bias_input >= 0 && sig.inputs[static_cast<size_t>(ep.bias_input)].shape.rank() != 1) {
    return "a bias not [N]";
  }
  *bias_input = ep.bias_input;
  return "";
}

std::string epilogue_support(const kernels::KernelSignature& sig, const Epilogue& ep) {
  const TensorType& out = sig.outputs[0];
  if (ep.bias_input >= 0) {
    int64_t n = out.shape[out.shape.rank() - 1];
    if (sig.inputs[ep.bias_input] != TensorType{out.dtype, Shape{n}}) {
      return "bias is not a vector over the output's last dim";
    }
  }
  if (ep.residual_input >= 0 && sig.inputs[ep.residual_input] != out) {
    return "residual does not have the output's type";
  }
  return activation_support(ep.activation);
}

bool relu_after_primitive(const Epilogue& ep) {
  return ep.activation == ops::Activation::kRelu;
}

dnnl::post_ops epilogue_post_ops(const Epilogue& ep) {
  dnnl::post_ops ops;
  if (ep.residual_input >= 0) ops.append_sum(1.0f);
  if (!relu_after_primitive(ep)) append_activation(ops, ep.activation);
  return ops;
}

void finish_epilogue(const Epilogue& ep, kernels::KernelContext& ctx) {
  if (relu_after_primitive(ep)) relu_in_place(ctx.outputs[0]);
}

void load_residual(const Epilogue& ep, kernels::KernelContext& ctx) {
  if (ep.residual_input < 0) return;
  Tensor& out = ctx.outputs[0];
  const Tensor& residual = ctx.inputs[ep.residual_input];
  if (residual.raw_data() == out.raw_data()) return;  // planned in place (fused_ops.cc)
  // Spread over the threads from 1 MiB: one thread copied a 4 MB residual in ~0.6 ms.
  constexpr size_t kPiece = size_t{256} << 10;
  const size_t bytes = out.nbytes();
  const auto* src = static_cast<const char*>(residual.raw_data());
  auto* dst = static_cast<char*>(out.raw_data());
  const int64_t pieces = static_cast<int64_t>((bytes + kPiece - 1) / kPiece);
#pragma omp parallel for schedule(static) if (pieces >= 4 && !omp_in_parallel())
  for (int64_t p = 0; p < pieces; ++p) {
    const size_t at = static_cast<size_t>(p) * kPiece;
    std::memcpy(dst + at, src + at, std::min(kPiece, bytes - at));
  }
}

dnnl::primitive_attr make_attr(const dnnl::post_ops& ops) {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  if (ops.len() > 0) attr.set_post_ops(ops);
  return attr;
}

void init_matmul(PrimitiveRunner& runner, const dnnl::memory::desc& a, const dnnl::memory::desc& b,
                 const dnnl::memory::desc& c, bool accumulate) {
  dnnl::post_ops ops;
  if (accumulate) ops.append_sum(1.0f);
  dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a, b, c), make_attr(ops), engine());
  runner.init<dnnl::matmul>(pd);
  runner.add_arg(DNNL_ARG_SRC, pd.src_desc());
  runner.add_arg(DNNL_ARG_WEIGHTS, pd.weights_desc());
  runner.add_arg(DNNL_ARG_DST, pd.dst_desc());
}

std::string describe(const dnnl::error& e) {
  if (e.status == dnnl_unimplemented) return "oneDNN has no implementation for this case";
  return str_cat("oneDNN: ", e.what());
}

// --- PrimitiveRunner ---

void PrimitiveRunner::init_impl(dnnl::primitive prim, const dnnl::memory::desc& scratchpad_md) {
  prim_ = std::move(prim);
  scratchpad_bytes_ = scratchpad_md.get_size();
  if (scratchpad_bytes_ > 0) add_arg(DNNL_ARG_SCRATCHPAD, scratchpad_md);
}

void PrimitiveRunner::add_arg(int arg, const dnnl::memory::desc& md) {
  args_.insert_or_assign(arg, dnnl::memory(md, engine(), DNNL_MEMORY_NONE));
}

void PrimitiveRunner::set(int arg, const void* data) {
  auto it = args_.find(arg);
  if (it == args_.end())
    throw_error(ErrorCode::kInternal, "oneDNN argument ", arg, " not declared");
  // oneDNN takes non-const handles; inputs are only read.
  it->second.set_data_handle(const_cast<void*>(data));
}

void PrimitiveRunner::execute() {
  if (scratchpad_bytes_ > 0) {
    args_.at(DNNL_ARG_SCRATCHPAD).set_data_handle(thread_scratchpad().get(scratchpad_bytes_));
  }
  guarded("oneDNN execute", [&] {
    prim_.execute(stream(), args_);
    stream().wait();
  });
}

// --- ActivationReorder ---

ActivationReorder::ActivationReorder(const dnnl::memory::desc& user,
                                     const dnnl::memory::desc& primitive, int slot,
                                     bool add_to_user)
    : slot_(slot), bytes_(primitive.get_size()) {
  if (slot < 0 || slot >= kLayoutSlots) {
    throw_error(ErrorCode::kInternal, "ActivationReorder: slot ", slot, " out of range");
  }
  if (user == primitive) return;
  to_primitive_ = Reorder(user, primitive);
  to_user_ = Reorder(primitive, user, add_to_user);
}

void* ActivationReorder::buffer(void* user) const {
  return needed() ? layout_slot(slot_, bytes_) : user;
}

void* ActivationReorder::to_primitive(const void* user) {
  if (!needed()) return const_cast<void*>(user);
  void* b = layout_slot(slot_, bytes_);
  to_primitive_.run(user, b);
  return b;
}

void ActivationReorder::to_user(void* user) {
  if (needed()) to_user_.run(layout_slot(slot_, bytes_), user);
}

// --- AlignedBuffer ---

AlignedBuffer::AlignedBuffer(size_t bytes) : bytes_(bytes) {
  if (bytes == 0) return;
  void* p = std::aligned_alloc(64, (bytes + 63) / 64 * 64);
  if (!p) throw_error(ErrorCode::kResourceExhausted, "oneDNN kernel buffer of ", bytes, " bytes");
  data_.reset(p);
}

void AlignedBuffer::Free::operator()(void* p) const {
  std::free(p);
}

// --- Reorder ---

Reorder::Reorder(const dnnl::memory::desc& from, const dnnl::memory::desc& to, bool accumulate) {
  from_ = dnnl::memory(from, engine(), DNNL_MEMORY_NONE);
  to_ = dnnl::memory(to, engine(), DNNL_MEMORY_NONE);
  dnnl::primitive_attr attr;
  if (accumulate) {
    dnnl::post_ops ops;
    ops.append_sum(1.0f);
    attr.set_post_ops(ops);
  }
  prim_ = dnnl::reorder(from_, to_, attr);
  defined_ = true;
}

void Reorder::run(const void* from, void* to) {
  from_.set_data_handle(const_cast<void*>(from));
  to_.set_data_handle(to);
  guarded("oneDNN reorder", [&] {
    prim_.execute(stream(), from_, to_);
    stream().wait();
  });
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

}  // namespace tern::cpu::onednn
