// Scalar semantics of each fused_elementwise opcode and each epilogue activation, in the compute
// type C (float or double). Every fused kernel (ref and fast) evaluates through these, so the
// meaning of an opcode is written once; the formulas follow the unfused ops (docs/ops.md).
#pragma once

#include <cmath>
#include <string_view>

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

// Applies opcode `op` to a (and b for binary opcodes); kImm is not handled here.
template <typename C>
inline C fused_scalar(FusedOpcode op, C a, C b) {
  using F = FusedOpcode;
  switch (op) {
    case F::kImm:
      return C(0);
    case F::kNeg:
      return -a;
    case F::kAbs:
      return std::abs(a);
    case F::kExp:
      return std::exp(a);
    case F::kLog:
      return std::log(a);
    case F::kLog1p:
      return std::log1p(a);
    case F::kSqrt:
      return std::sqrt(a);
    case F::kRsqrt:
      return C(1) / std::sqrt(a);
    case F::kSquare:
      return a * a;
    case F::kTanh:
      return std::tanh(a);
    case F::kSigmoid:
      return sigmoid_scalar(a);
    case F::kRelu:
      return relu_scalar(a);
    case F::kSoftplus:
      return (a > C(0) ? a : C(0)) + std::log1p(std::exp(-std::fabs(a)));
    case F::kSin:
      return std::sin(a);
    case F::kCos:
      return std::cos(a);
    case F::kSign:
      if (a > C(0)) return C(1);
      if (a < C(0)) return C(-1);
      return a == a ? C(0) : a;  // zero, or NaN kept
    case F::kGeluTanh:
      return gelu_tanh_scalar(a);
    case F::kGeluErf:
      return gelu_erf_scalar(a);
    case F::kAdd:
      return a + b;
    case F::kSub:
      return a - b;
    case F::kMul:
      return a * b;
    case F::kDiv:
      return a / b;
    case F::kPow:
      return std::pow(a, b);
    case F::kMaximum:
      if (a != a) return a;  // NaN propagates
      if (b != b) return b;
      return a < b ? b : a;
    case F::kMinimum:
      if (a != a) return a;
      if (b != b) return b;
      return b < a ? b : a;
    case F::kReluGrad:
      return b > C(0) ? a : C(0);
    case F::kSigmoidGrad:
      return a * b * (C(1) - b);
    case F::kTanhGrad:
      return a * (C(1) - b * b);
    case F::kGeluTanhGrad:
      return a * gelu_tanh_grad_scalar(b);
    case F::kGeluErfGrad:
      return a * gelu_erf_grad_scalar(b);
  }
  return C(0);
}

// Applies an epilogue activation by name ("none", "relu", "gelu_tanh", "gelu_erf", "sigmoid",
// "tanh"); the name was validated by inference.
template <typename C>
inline C epilogue_activation_scalar(std::string_view act, C x) {
  if (act == "relu") return relu_scalar(x);
  if (act == "gelu_tanh") return gelu_tanh_scalar(x);
  if (act == "gelu_erf") return gelu_erf_scalar(x);
  if (act == "sigmoid") return sigmoid_scalar(x);
  if (act == "tanh") return std::tanh(x);
  return x;
}

}  // namespace tern::ops
