// Placement of nodes on devices, and the copy kernel between them.
#include "tern/runtime/placement.h"

namespace tern::runtime {
namespace {

class CopyKernel final : public kernels::Kernel {
 public:
  void run(kernels::KernelContext& ctx) override { ctx.outputs[0].copy_from(ctx.inputs[0]); }
};

}  // namespace

Placement place_node(const kernels::KernelSignature& sig, DeviceBackend& home,
                     const std::string& force) {
  const auto& registry = kernels::KernelRegistry::global();
  try {
    return {registry.select(sig, force), &home};
  } catch (const Error& e) {
    const bool movable = home.type() != DeviceType::kCPU && !home.memory_is_host_accessible() &&
                         !sig.op->has_trait(ops::kTraitMutatesInputs);
    DeviceBackend* cpu = DeviceRegistry::global().find(DeviceType::kCPU);
    if (!movable || !cpu || e.code() == ErrorCode::kFailedPrecondition) throw;
    kernels::KernelSignature on_host = sig;
    on_host.device = DeviceType::kCPU;
    try {
      return {registry.select(on_host, force), cpu};
    } catch (const Error& host_error) {
      throw_error(host_error.code(), e.message(), "; on the host instead: ", host_error.message());
    }
  }
}

bool needs_copy(const Tensor& value, const DeviceBackend& consumer) {
  if (value.backend() == &consumer) return false;
  return !(consumer.memory_is_host_accessible() && value.is_host_accessible());
}

std::unique_ptr<kernels::Kernel> make_copy_kernel() {
  return std::make_unique<CopyKernel>();
}

std::string copy_kind(const Tensor& from, const DeviceBackend& to) {
  const bool from_host = from.is_host_accessible();
  const bool to_host = to.memory_is_host_accessible();
  if (from_host && !to_host) return "h2d";
  if (!from_host && to_host) return "d2h";
  return "d2d";
}

}  // namespace tern::runtime
