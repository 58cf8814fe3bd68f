// The CPU backend: the CPU DeviceBackend (its own host allocator, an inline stream, OpenMP
// intra-op threads) and registration of the fast CPU kernels (oneDNN and vectorized loops) ahead
// of the reference kernels.
#pragma once

#include "tern/device/device.h"
#include "tern/kernels/kernel.h"

namespace tern::cpu {

// Registers the CPU DeviceBackend and every fast CPU kernel candidate (idempotent).
void register_cpu_backend(kernels::KernelRegistry& kernels, DeviceRegistry& devices);

}  // namespace tern::cpu
