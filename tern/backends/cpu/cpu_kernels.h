// Fast CPU kernel families (each in its own file) registered ahead of `ref`.
#pragma once

#include "tern/kernels/kernel.h"

namespace tern::cpu {

// Priorities: oneDNN candidates 20, vectorized loops 10, ref 0.
constexpr int kOneDnnPriority = 20;
constexpr int kVectorPriority = 10;

void register_cpu_kernels(kernels::KernelRegistry& r);

void register_optimizer_kernels(kernels::KernelRegistry& r);  // optimizer_update.cc

}  // namespace tern::cpu
