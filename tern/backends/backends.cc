// Registration of the linked backends.
#include "tern/backends/backends.h"

#include <mutex>

#include "tern/backends/cpu/cpu_backend.h"
#include "tern/device/device.h"
#include "tern/kernels/ref/ref.h"

namespace tern::backends {

void register_backends() {
  static std::once_flag once;
  std::call_once(once, [] {
    auto& kernels = kernels::KernelRegistry::global();
    kernels::ref::register_ref_kernels(kernels);
    cpu::register_cpu_backend(kernels, DeviceRegistry::global());
  });
}

}  // namespace tern::backends
