// Vectorized elementwise kernel families (priority kVectorPriority, name "vec"): loops the
// compiler vectorizes for x86-64-v3, split over OpenMP threads above kParallelThreshold elements.
#pragma once

#include "tern/kernels/kernel.h"

namespace tern::cpu {

// Unary math, the relu/gelu/sigmoid/tanh gradient helpers and casts among f32/bf16/f16
// (elementwise_unary.cc, elementwise_cast.cc).
void register_elementwise_unary_kernels(kernels::KernelRegistry& r);
// Casts among f32/bf16/f16 (elementwise_cast.cc; registered by the unary family).
void register_elementwise_cast_kernels(kernels::KernelRegistry& r);
// add, sub, mul, div, maximum, minimum (f32/bf16/f16) and where (every dtype), for same-shape,
// scalar, row and column broadcasts (elementwise_binary.cc); also registers the comparisons.
void register_elementwise_binary_kernels(kernels::KernelRegistry& r);
// equal ... greater_equal on every dtype (elementwise_compare.cc).
void register_elementwise_compare_kernels(kernels::KernelRegistry& r);

// Converts `n` elements between bf16 and f32 (either way; the cast kernel's rounding), split over
// OpenMP threads. x86-64-v3 code: only where cpu_isa() is kX86_64_v3 (elementwise_cast.cc).
void convert_bf16_f32(const void* in, DType from, void* out, DType to, int64_t n);

}  // namespace tern::cpu
