// Float math for the vectorized elementwise kernels: branch-free, libm-free versions of exp, log,
// log1p, tanh, sigmoid, the normal CDF and gelu that GCC inlines and vectorizes inside
// `#pragma omp simd` loops (a libm call would keep the loop scalar). exp/log/tanh follow Cephes'
// single-precision range reductions and polynomials (within a few ulp of libm over the whole
// float range, NaN and infinities included); the normal CDF uses a polynomial fit of erfc's
// scaled form (relative error < 7.5e-7 for |x| < 5.6). Only float.
//
// Choices go through select(), a bit mask, never `cond ? a : b`: GCC turns a conditional into a
// branch, sinks the arithmetic that only one side uses into it, and then (with the default
// -ftrapping-math) can neither if-convert nor vectorize the loop.
#pragma once

#include <bit>
#include <cstdint>
#include <limits>

#define TERN_VMATH_INLINE [[gnu::always_inline]] inline

namespace tern::cpu::vmath {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

// c ? a : b without a branch.
TERN_VMATH_INLINE float select(bool c, float a, float b) {
  uint32_t m = 0u - static_cast<uint32_t>(c);
  return std::bit_cast<float>((std::bit_cast<uint32_t>(a) & m) | (std::bit_cast<uint32_t>(b) & ~m));
}

// max(a, b) keeping NaN: a NaN operand wins, the first one if both (as `maximum` and
// max_pool2d's ref).
TERN_VMATH_INLINE float maximum(float a, float b) {
  return vmath::select(a != a, a, vmath::select(b != b, b, vmath::select(a < b, b, a)));
}

TERN_VMATH_INLINE float abs(float x) {
  return std::bit_cast<float>(std::bit_cast<uint32_t>(x) & 0x7fffffffu);
}

// |magnitude| with the sign of `sign`.
TERN_VMATH_INLINE float copy_sign(float magnitude, float sign) {
  uint32_t m = std::bit_cast<uint32_t>(magnitude) & 0x7fffffffu;
  return std::bit_cast<float>(m | (std::bit_cast<uint32_t>(sign) & 0x80000000u));
}

// 2^e for integer e in [-126, 127].
TERN_VMATH_INLINE float pow2(int32_t e) {
  return std::bit_cast<float>(static_cast<uint32_t>(e + 127) << 23);
}

// e^x: x = n ln2 + r with |r| <= ln2/2, e^r by a degree-6 polynomial, 2^n applied as two
// factors so results from denormals up to overflow (inf) come out right. NaN flows through.
TERN_VMATH_INLINE float exp(float x) {
  float xc = vmath::select(x < -104.f, -104.f, x);
  xc = vmath::select(xc > 89.f, 89.f, xc);
  // Adding 1.5 * 2^23 rounds to an integer, which then sits in the low mantissa bits.
  float shifted = xc * 1.44269504088896341f + 12582912.f;
  float n = shifted - 12582912.f;
  int32_t e = std::bit_cast<int32_t>(shifted) - std::bit_cast<int32_t>(12582912.f);
  float r = xc - n * 0.693359375f;
  r = r - n * -2.12194440e-4f;
  // The degree-5 polynomial by Estrin's scheme (shorter chain of dependent FMAs than Horner's).
  float r2 = r * r;
  float q01 = 1.6666665459e-1f * r + 5.0000001201e-1f;
  float q23 = 8.3334519073e-3f * r + 4.1665795894e-2f;
  float q45 = 1.9875691500e-4f * r + 1.3981999507e-3f;
  float p = (q45 * r2 + q23) * r2 + q01;
  p = p * r2 + r + 1.f;
  int32_t e1 = e >> 1;
  return p * pow2(e1) * pow2(e - e1);
}

// Natural log: x = 2^e m with m in [sqrt(1/2), sqrt(2)), log(m) by a degree-9 polynomial.
TERN_VMATH_INLINE float log(float x) {
  bool denormal = x < 1.17549435e-38f;
  float xs = vmath::select(denormal, x * 8388608.f, x);  // 2^23
  uint32_t u = std::bit_cast<uint32_t>(xs);
  int32_t e = static_cast<int32_t>((u >> 23) & 0xffu) - 126 - 23 * static_cast<int32_t>(denormal);
  float m = std::bit_cast<float>((u & 0x007fffffu) | 0x3f000000u);  // [0.5, 1)
  bool low = m < 0.707106781186547524f;
  e -= static_cast<int32_t>(low);
  m = vmath::select(low, m + m - 1.f, m - 1.f);
  float z = m * m;
  float y = 7.0376836292e-2f;
  y = y * m - 1.1514610310e-1f;
  y = y * m + 1.1676998740e-1f;
  y = y * m - 1.2420140846e-1f;
  y = y * m + 1.4249322787e-1f;
  y = y * m - 1.6668057665e-1f;
  y = y * m + 2.0000714765e-1f;
  y = y * m - 2.4999993993e-1f;
  y = y * m + 3.3333331174e-1f;
  y = y * m * z;
  float fe = static_cast<float>(e);
  y = y + -2.12194440e-4f * fe;
  y = y - 0.5f * z;
  float result = (m + y) + 0.693359375f * fe;
  result = vmath::select(x == 0.f, -kInf, result);
  result = vmath::select(x < 0.f, kNaN, result);
  result = vmath::select(x == kInf, kInf, result);
  return vmath::select(x != x, x, result);
}

// log(1 + x) without losing small x: log(u) * x / (u - 1) with u = 1 + x (exact correction of
// the rounding in u).
TERN_VMATH_INLINE float log1p(float x) {
  float u = 1.f + x;
  float d = u - 1.f;
  float result = vmath::select(d == 0.f, x, vmath::log(u) * (x / d));
  return vmath::select(u == kInf, kInf, result);
}

TERN_VMATH_INLINE float tanh(float x) {
  float ax = vmath::abs(x);
  float large = 1.f - 2.f / (vmath::exp(2.f * ax) + 1.f);
  float z = x * x;
  float p = -5.70498872745e-3f;
  p = p * z + 2.06390887954e-2f;
  p = p * z - 5.37397155531e-2f;
  p = p * z + 1.33314422036e-1f;
  p = p * z - 3.33332819422e-1f;
  float small = x + x * z * p;
  return vmath::select(ax < 0.625f, small, vmath::copy_sign(large, x));
}

// 1 / (1 + e^-x), from e^-|x| so neither side overflows (the lower tail keeps its denormals).
TERN_VMATH_INLINE float sigmoid(float x) {
  float e = vmath::exp(-vmath::abs(x));
  float r = 1.f / (1.f + e);
  return vmath::select(x < 0.f, e * r, r);
}

// erfc(z) for z >= 0 as t Q(t) e^{-z^2}, t = 1 / (1 + z / 2): Q is a degree-10 polynomial fitted
// (least squares in relative error, over t in [0, 1], i.e. every z >= 0) to erfc(z) e^{z^2} / t, a
// smooth function of t (Q(0) = 1 / (2 sqrt(pi)), the tail's asymptote). The fit's relative error is
// 1.2e-8. Evaluated in float (against double erfc): relative error < 5.1e-7 for z <= 2, 7.5e-7
// for z <= 4, 4e-6 at z ~ 8, where the rounding of z^2 inside exp dominates (Numerical Recipes'
// Chebyshev form t e^{P(t) - z^2}, used before: 5.9e-7, 1.6e-6, 7.8e-6). Keeping the Gaussian
// factor apart lets the normal CDF and density share one exp (gelu's derivative needs both). The
// polynomial runs by Estrin's scheme (pairs, pairs of pairs, with t^2, t^4, t^8): a third of
// Horner's chain of dependent FMAs, which is what bounds a vector loop of gelu.
TERN_VMATH_INLINE float erfc_scaled_nonnegative(float t) {
  float t2 = t * t;
  float t4 = t2 * t2;
  float p01 = 0.282093754f * t + 0.282094795f;
  float p23 = 0.175315976f * t + 0.246884575f;
  float p45 = -0.0592113581f * t + 0.0934624344f;
  float p67 = -0.454973989f * t + 0.132177045f;
  float p89 = -0.234733593f * t + 0.493694933f;
  float p810 = 0.0431954333f * t2 + p89;
  float p03 = p23 * t2 + p01;
  float p47 = p67 * t2 + p45;
  float p07 = p47 * t4 + p03;
  return t * (p810 * (t4 * t4) + p07);
}

// erfc(z) for z >= 0 (see erfc_scaled_nonnegative).
TERN_VMATH_INLINE float erfc_nonnegative(float z) {
  float t = 1.f / (1.f + 0.5f * z);
  return vmath::erfc_scaled_nonnegative(t) * vmath::exp(-z * z);
}

// Phi(x), the standard normal CDF, as 0.5 erfc(-x / sqrt 2).
TERN_VMATH_INLINE float normal_cdf(float x) {
  float half_erfc = 0.5f * vmath::erfc_nonnegative(vmath::abs(x) * 0.70710678118654752f);
  return vmath::select(x < 0.f, half_erfc, 1.f - half_erfc);
}

constexpr float kSqrt2OverPi = 0.79788456080286536f;
constexpr float kGeluCubic = 0.044715f;

TERN_VMATH_INLINE float gelu_erf(float x) {
  return x * vmath::normal_cdf(x);
}

// 0.5 x (1 + tanh(u)) == x * sigmoid(2u): no cancellation for negative x.
TERN_VMATH_INLINE float gelu_tanh(float x) {
  float u = kSqrt2OverPi * (x + kGeluCubic * x * x * x);
  return x * vmath::sigmoid(2.f * u);
}

// Phi(x) + x phi(x), with one exp: phi(x) = e^{-z^2} / sqrt(2 pi) for z = |x| / sqrt 2 is the
// Gaussian factor of Phi's erfc.
TERN_VMATH_INLINE float gelu_erf_derivative(float x) {
  float z = vmath::abs(x) * 0.70710678118654752f;
  float gauss = vmath::exp(-z * z);
  float half_erfc = 0.5f * vmath::erfc_scaled_nonnegative(1.f / (1.f + 0.5f * z)) * gauss;
  float cdf = vmath::select(x < 0.f, half_erfc, 1.f - half_erfc);
  return cdf + x * (0.39894228040143268f * gauss);
}

// With s = sigmoid(2u): 0.5 (1 + tanh u) = s and 1 - tanh^2 u = 4 s (1 - s).
TERN_VMATH_INLINE float gelu_tanh_derivative(float x) {
  float u = kSqrt2OverPi * (x + kGeluCubic * x * x * x);
  float du = kSqrt2OverPi * (1.f + 3.f * kGeluCubic * x * x);
  float s = vmath::sigmoid(2.f * u);
  return s + 2.f * x * s * (1.f - s) * du;
}

}  // namespace tern::cpu::vmath
