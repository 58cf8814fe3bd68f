// Products cut along their depth for two threads, shared by the weight-gradient kernels (x^T dy
// with a deep K and a small C: cpu_weight_grad_bf16 and cpu_weight_grad_f32): each thread makes
// one half of K's sum, so each row of the operands is read once, and C is the first half's sum
// plus the second's.
//
// Compiled for x86-64-v3 (cpu_isa.h): call it only where cpu_isa() is kX86_64_v3.
#pragma once

#include <cstdint>
#include <functional>

namespace tern::cpu {

// c[0, elements) = part(0, half) + part(half, k): part(k0, k1, dst) writes the product of depth
// rows [k0, k1) into dst (C's layout); the second half goes into the calling thread's buffer.
// On the OpenMP threads (two, or one making both halves); each element sums in the same order
// whatever the thread count.
void sum_depth_halves(int64_t k, int64_t half, int64_t elements, float* c,
                      const std::function<void(int64_t k0, int64_t k1, float* dst)>& part);

}  // namespace tern::cpu
