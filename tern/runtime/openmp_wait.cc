// OpenMP wait policy: re-executes the program once with a bounded GOMP_SPINCOUNT.
#include "tern/runtime/openmp_wait.h"

#include <unistd.h>

#include <cstdlib>

namespace tern::runtime {

void use_bounded_openmp_spin(char** argv) {
  constexpr const char* kGuard = "TERN_OPENMP_REEXEC";
  if (std::getenv("OMP_WAIT_POLICY") || std::getenv("GOMP_SPINCOUNT") || std::getenv(kGuard))
    return;
  if (setenv("GOMP_SPINCOUNT", kDefaultSpinCount, 0) != 0 || setenv(kGuard, "1", 1) != 0) return;
  execv("/proc/self/exe", argv);
  // execv returned: keep running as we are (the policy does not change results, only speed).
}

}  // namespace tern::runtime
