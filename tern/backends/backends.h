// The backends this build links, registered in one place: the reference kernels (the oracle and
// the host's last resort) and the CPU backend; a CUDA backend would add one line here and one
// CMake option. The runtime calls register_backends() on first use and never names a backend.
#pragma once

namespace tern::backends {

// Registers every linked backend's DeviceBackend and kernel candidates. Idempotent.
void register_backends();

}  // namespace tern::backends
