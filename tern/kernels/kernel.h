// Kernel and KernelRegistry: for each (op, device) an ordered list of candidates, the last being
// `ref`. Selection asks each candidate in order; one that declines says why
// (TERN_VERBOSE=kernels prints the choice and every refusal). The CPU's `ref` kernels are offered
// to other devices only when the host can read their memory; an accelerator's op without a kernel
// of its own is placed on the host by the runtime (tern/runtime/placement.h), with copies.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tern/device/device.h"
#include "tern/ops/op_def.h"
#include "tern/tensor/tensor.h"

namespace tern::kernels {

// What a kernel is selected and prepared for: the op, its attributes and static types.
struct KernelSignature {
  const ops::OpDef* op = nullptr;
  const ops::Attrs* attrs = nullptr;
  std::vector<TensorType> inputs;
  std::vector<TensorType> outputs;
  DeviceType device = DeviceType::kCPU;
  bool deterministic = false;  // determinism mode: only bitwise-reproducible kernels accept
  // constant_inputs[i]: input i holds the same bytes at every run of this kernel (a constant, or
  // a variable of an executable compiled with frozen variables, e.g. a served model), so the
  // kernel may keep what it derives from them (a filter in its primitive's layout). Empty: none.
  std::vector<bool> constant_inputs;

  bool input_is_constant(size_t i) const {
    return i < constant_inputs.size() && constant_inputs[i];
  }

  DType key_dtype() const { return op->key_dtype(inputs, outputs); }
  std::string to_string() const;  // "matmul(f32[2, 3], f32[3, 4]) -> f32[2, 4]"
};

// One run: input and output tensors (outputs are preallocated with their inferred types) in the
// memory of the kernel's device, and the stream to order the work on (inline on the CPU).
struct KernelContext {
  std::span<const Tensor> inputs;
  std::span<Tensor> outputs;
  const ops::Attrs& attrs;
  Stream& stream;
};

// A kernel instance is made for one node and may keep prepared state (e.g. oneDNN primitives).
class Kernel {
 public:
  virtual ~Kernel() = default;
  virtual void run(KernelContext& ctx) = 0;
};

using KernelFn = std::function<void(KernelContext&)>;

class FnKernel final : public Kernel {
 public:
  explicit FnKernel(KernelFn fn) : fn_(std::move(fn)) {}
  void run(KernelContext& ctx) override { fn_(ctx); }

 private:
  KernelFn fn_;
};

struct KernelCandidate {
  std::string name;  // "ref", "onednn", "cpu_vec", ...
  DeviceType device = DeviceType::kCPU;
  std::vector<DType> dtypes;  // key dtypes accepted
  int priority = 0;           // higher is tried first; ref is 0
  bool deterministic = true;  // bitwise-reproducible run to run
  // Returns "" to accept the signature, or the reason it declines. Empty function: accept.
  std::function<std::string(const KernelSignature&)> decline;
  std::function<std::unique_ptr<Kernel>(const KernelSignature&)> create;

  bool is_ref() const { return name == "ref"; }
};

struct KernelSelection {
  std::unique_ptr<Kernel> kernel;
  const KernelCandidate* candidate = nullptr;
  std::vector<std::string> declined;  // "onednn: <reason>"
};

class KernelRegistry {
 public:
  static KernelRegistry& global();

  void add(std::string_view op, KernelCandidate candidate);
  // Candidates for (op, device) in the order they are tried: the device's own, then the CPU's
  // `ref` when the device is not the CPU but its memory is host-accessible.
  std::vector<const KernelCandidate*> candidates(std::string_view op, DeviceType device) const;
  // Every candidate registered for `op`, on any device.
  std::vector<const KernelCandidate*> all_candidates(std::string_view op) const;
  // Ops with at least one candidate (any device), sorted.
  std::vector<std::string> ops() const;
  // The first candidate that accepts; InvalidArgument naming the op, dtype, device and every
  // refusal if none does. With `force` non-empty only the candidate of that name is asked (dtype,
  // determinism and decline are checked the same way): NotFound if there is none.
  KernelSelection select(const KernelSignature& sig, std::string_view force = {}) const;
  // True if a non-ref candidate exists for (op, device, dtype).
  bool has_fast(std::string_view op, DeviceType device, DType dtype) const;
  // True if a non-ref candidate takes `sig` (select's checks, without making the kernel).
  bool takes_fast(const KernelSignature& sig) const;
  bool has_ref(std::string_view op, DType dtype) const;

 private:
  std::map<std::string, std::vector<KernelCandidate>, std::less<>> table_;
};

// Helper for stateless kernels: add a candidate whose every instance runs `fn`.
void add_fn_kernel(KernelRegistry& r, std::string_view op, std::string name,
                   std::vector<DType> dtypes, int priority, KernelFn fn,
                   std::function<std::string(const KernelSignature&)> decline = {});

}  // namespace tern::kernels
