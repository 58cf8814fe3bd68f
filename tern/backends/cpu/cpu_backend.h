// The CPU backend: host allocator, the CPU DeviceBackend, and registration of fast CPU kernels
// (oneDNN and vectorized loops) ahead of the reference kernels.
#pragma once

#include "tern/kernels/kernel.h"

namespace tern::cpu {

// Registers the CPU DeviceBackend and every fast CPU kernel candidate (idempotent).
void register_cpu_backend(kernels::KernelRegistry& r);

}  // namespace tern::cpu
