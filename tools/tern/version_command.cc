// `tern --version`: tern's version, the oneDNN it was built with and runs with, the compiler, the
// build type and CPU flags, the instructions the vectorized kernels use on this CPU, and how bf16
// matmuls and convolutions run.
#include <cstring>
#include <iostream>
#include <string>

#include "tern/backends/cpu/cpu_backend.h"
#include "tern/base/version.h"
#include "tools/tern/commands.h"

namespace tern::tools {

int cmd_version(int argc, char** argv) {
  if (argc > 1) {
    std::cerr << "tern --version: takes no arguments (got '" << argv[1] << "')\n";
    return 2;
  }
  const BuildInfo b = build_info();
  // May throw (a bad TERN_BF16_CONTRACTIONS): before anything is printed.
  const std::string bf16 = cpu::bf16_contractions_mode();
  std::cout << "tern " << version() << "\n"
            << "oneDNN " << cpu::onednn_version_loaded() << " (built with "
            << cpu::onednn_version_built() << ")\n"
            << "compiler: " << b.compiler << "\n"
            << "build: " << b.build_type << ", " << b.libraries << " libraries, " << b.cpu_flags
            << "\n"
            << "vectorized kernels: " << cpu::vector_kernels_isa() << "\n"
            << "bf16 matmuls and convolutions: " << bf16 << "\n";
  return 0;
}

}  // namespace tern::tools
