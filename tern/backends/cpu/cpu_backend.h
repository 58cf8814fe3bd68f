// The CPU backend: the CPU DeviceBackend (its own host allocator, an inline stream, OpenMP
// intra-op threads) and registration of the fast CPU kernels (oneDNN and vectorized loops) ahead
// of the reference kernels.
#pragma once

#include <string>

#include "tern/device/device.h"
#include "tern/kernels/kernel.h"

namespace tern::cpu {

// Registers the CPU DeviceBackend and every fast CPU kernel candidate (idempotent).
void register_cpu_backend(kernels::KernelRegistry& kernels, DeviceRegistry& devices);

// oneDNN's version as "2.6.3": the headers tern was compiled with, and the library loaded now.
std::string onednn_version_built();
std::string onednn_version_loaded();
// The instructions the vectorized kernels use on this CPU: "x86-64-v3", or "x86-64" when the
// CPU (or TERN_CPU_ISA) rules them out and ref kernels run instead (cpu_isa.h).
std::string vector_kernels_isa();
// How bf16 matmuls and convolutions run: "bf16 (AMX)" or "bf16 (AMD, no AMX; AVX512_BF16 dot
// products at 2.0x the f32 FLOP rate)" on oneDNN's bf16 kernels, "widened to f32 (no AMX; ... at
// 1.0x ...)" or "widened to f32 (no AMX, no AVX512_BF16)" on its f32 ones (onednn_widen.cc; the
// rate is bf16_dot_speedup's, cpu_isa.h, measured when this is first called, for the record), "...
// (TERN_BF16_CONTRACTIONS)" where the environment chose, or "widened to f32 (no AVX-512)". An
// invalid TERN_BF16_CONTRACTIONS is an InvalidArgument error naming the variable.
std::string bf16_contractions_mode();
// Whether bf16 matmuls and convolutions run widened to f32 (every mode above but the "bf16" ones).
bool bf16_contractions_widened();

}  // namespace tern::cpu
