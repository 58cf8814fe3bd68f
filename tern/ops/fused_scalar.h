// The scalar formulas of the elementwise math that fusion and the reference kernels share, in the
// compute type C (float or double): the opcode table's rows (fused_program.cc) call these, the
// reference unary kernels (tern/kernels/ref/unary_ref.cc) call them too, and fused_scalar() /
// activation_scalar() evaluate a row. The CPU backend's vector formulas are its own
// (tern/backends/cpu/elementwise_math.h) and are tested against these.
#pragma once

#include <cmath>

#include "tern/ops/fused_program.h"

namespace tern::ops {

template <typename C>
inline C gelu_tanh_scalar(C x) {
  const C k0 = static_cast<C>(0.7978845608028654);  // sqrt(2 / pi)
  const C k1 = static_cast<C>(0.044715);
  return static_cast<C>(0.5) * x * (C(1) + std::tanh(k0 * (x + k1 * x * x * x)));
}

template <typename C>
inline C gelu_erf_scalar(C x) {
  return static_cast<C>(0.5) * x * (C(1) + std::erf(x * static_cast<C>(0.7071067811865476)));
}

template <typename C>
inline C gelu_tanh_grad_scalar(C x) {
  const C k0 = static_cast<C>(0.7978845608028654);
  const C k1 = static_cast<C>(0.044715);
  C t = std::tanh(k0 * (x + k1 * x * x * x));
  C du = k0 * (C(1) + static_cast<C>(3 * 0.044715) * x * x);
  return static_cast<C>(0.5) * (C(1) + t) + static_cast<C>(0.5) * x * (C(1) - t * t) * du;
}

template <typename C>
inline C gelu_erf_grad_scalar(C x) {
  const C inv_sqrt_2pi = static_cast<C>(0.3989422804014327);
  C cdf = static_cast<C>(0.5) * (C(1) + std::erf(x * static_cast<C>(0.7071067811865476)));
  C pdf = inv_sqrt_2pi * std::exp(static_cast<C>(-0.5) * x * x);
  return cdf + x * pdf;
}

// Both branches avoid overflow of exp for large |x|.
template <typename C>
inline C sigmoid_scalar(C x) {
  if (x >= C(0)) return C(1) / (C(1) + std::exp(-x));
  C e = std::exp(x);
  return e / (C(1) + e);
}

// max(x, 0) with NaN kept (NaN < 0 is false).
template <typename C>
inline C relu_scalar(C x) {
  return x < C(0) ? C(0) : x;
}

// Applies opcode `op` to a (and b for binary opcodes) through its table row; kImm gives 0.
inline float fused_scalar(FusedOpcode op, float a, float b) {
  return fused_opcode_info(op).scalar.f32(a, b);
}
inline double fused_scalar(FusedOpcode op, double a, double b) {
  return fused_opcode_info(op).scalar.f64(a, b);
}

// Applies an epilogue activation (kNone is the identity).
template <typename C>
inline C activation_scalar(Activation act, C x) {
  const FusedOpcodeInfo* op = activation_info(act).opcode;
  return op ? fused_scalar(op->code, x, C(0)) : x;
}

}  // namespace tern::ops
