// The list of fast CPU kernel families.
#include "tern/backends/cpu/cpu_kernels.h"

#include "tern/backends/cpu/onednn_kernels.h"

namespace tern::cpu {

void register_cpu_kernels(kernels::KernelRegistry& r) {
  register_onednn_matmul(r);
  register_optimizer_kernels(r);
}

}  // namespace tern::cpu
