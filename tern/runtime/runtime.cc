// One-time initialization and intra-op threads.
#include "tern/runtime/runtime.h"

#include <omp.h>

#include <mutex>

#include "tern/backends/cpu/cpu_backend.h"
#include "tern/base/thread_pool.h"
#include "tern/kernels/ref/ref.h"

namespace tern::runtime {

void initialize() {
  static std::once_flag once;
  std::call_once(once, [] {
    auto& reg = kernels::KernelRegistry::global();
    kernels::ref::register_ref_kernels(reg);
    cpu::register_cpu_backend(reg);
  });
}

void set_intra_op_threads(int n) {
  omp_set_num_threads(n > 0 ? n : available_cores());
}

int intra_op_threads() {
  return omp_get_max_threads();
}

}  // namespace tern::runtime
