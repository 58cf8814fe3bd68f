// OpenMP wait policy: re-executes the program once with OMP_WAIT_POLICY=PASSIVE.
#include "tern/runtime/openmp_wait.h"

#include <unistd.h>

#include <cstdlib>

namespace tern::runtime {

void use_passive_openmp_wait(char** argv) {
  constexpr const char* kGuard = "TERN_OPENMP_REEXEC";
  if (std::getenv("OMP_WAIT_POLICY") || std::getenv("GOMP_SPINCOUNT") || std::getenv(kGuard))
    return;
  if (setenv("OMP_WAIT_POLICY", "PASSIVE", 0) != 0 || setenv(kGuard, "1", 1) != 0) return;
  execv("/proc/self/exe", argv);
  // execv returned: keep running as we are (the policy does not change results, only speed).
}

}  // namespace tern::runtime
