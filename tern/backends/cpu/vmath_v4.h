// AVX-512 forms of elementwise_math.h's functions, sixteen floats at a time, for kernels that
// write their loops with intrinsics: exp16 (vmath::exp's range reduction and polynomial; the
// fused attention kernel's softmax) and the erf form of GELU and its derivative (vmath::gelu_erf
// and vmath::gelu_erf_derivative: the same erfc polynomial, on exp16), with the loops of the
// vectorized gelu / gelu_grad kernels and fused_elementwise's rows. 2^n is applied by one
// vscalefps (exact into the denormals, where the portable form multiplies by two powers of two),
// n rounded by vrndscaleps, the sign choice a masked blend. GCC's 512-bit build of the portable
// GELU runs out of registers (the exp clamps' constants are reloaded from the stack, choices are
// masked moves, 2^n takes shifts and two multiplies). On 2 Zen 5 cores (kernel_ab_bench, [4096,
// 1024], interleaved against GCC's loops): f32 gelu 0.85-0.87 -> 0.64-0.65 ms, f32 gelu_grad
// 0.89-0.92 -> 0.70, bf16 gelu (through float blocks) 1.01-1.03 -> 0.81-0.82, bf16 gelu_grad 1.03
// -> 0.90; W6's GELU nodes 7.9 -> 6.4 ms per step (f32, 3 interleaved `--profile` rounds),
// W6-bf16's 7.2-7.5 -> 6.8-7.0. Results agree with the portable form within the bounds the
// portable form is tested to against double precision (vscalefps rounds a denormal once; the
// products fuse into FMAs), tested the same way.
//
// Include only from a TERN_CPU_V3_BEGIN region and call only where cpu_runs_v4_variants(), from
// functions compiled for AVX-512 (TERN_CPU_V4_LOOP or arch=x86-64-v4).
#pragma once

#include <immintrin.h>

#include <cstdint>

#define TERN_VMATH_V4 \
  [[gnu::always_inline]] inline __attribute__((target("avx512f,avx512bw,avx512vl")))

namespace tern::cpu::vmath_v4 {

// The maskz forms with every lane on are the plain instructions; the plain intrinsics trip GCC
// 12's -Wmaybe-uninitialized (their undefined pass-through operand), as in small_gemm.cc.
constexpr __mmask16 kAll = 0xFFFF;

TERN_VMATH_V4 __m512 splat(float v) {
  return _mm512_set1_ps(v);
}

// e^x: vmath::exp's reduction x = n ln2 + r and its degree-6 polynomial, then p * 2^n by
// vscalefps (which takes results down to denormals and up to inf); x clamped to [-104, 89] as
// there. NaN flows through (vminps / vmaxps return their second operand, x, when it is NaN).
TERN_VMATH_V4 __m512 exp16(__m512 x) {
  const __m512 xc =
      _mm512_maskz_max_ps(kAll, splat(-104.f), _mm512_maskz_min_ps(kAll, splat(89.f), x));
  const __m512 n = _mm512_maskz_roundscale_ps(kAll, _mm512_mul_ps(xc, splat(1.44269504088896341f)),
                                              _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, splat(0.693359375f), xc);
  r = _mm512_fnmadd_ps(n, splat(-2.12194440e-4f), r);
  const __m512 r2 = _mm512_mul_ps(r, r);
  const __m512 q01 = _mm512_fmadd_ps(splat(1.6666665459e-1f), r, splat(5.0000001201e-1f));
  const __m512 q23 = _mm512_fmadd_ps(splat(8.3334519073e-3f), r, splat(4.1665795894e-2f));
  const __m512 q45 = _mm512_fmadd_ps(splat(1.9875691500e-4f), r, splat(1.3981999507e-3f));
  __m512 p = _mm512_fmadd_ps(_mm512_fmadd_ps(q45, r2, q23), r2, q01);
  p = _mm512_fmadd_ps(p, r2, _mm512_add_ps(r, splat(1.f)));
  return _mm512_maskz_scalef_ps(kAll, p, n);
}

// vmath::erfc_scaled_nonnegative: t Q(t), Q by Estrin's scheme.
TERN_VMATH_V4 __m512 erfc_scaled(__m512 t) {
  const __m512 t2 = _mm512_mul_ps(t, t), t4 = _mm512_mul_ps(t2, t2);
  const __m512 p01 = _mm512_fmadd_ps(splat(0.282093754f), t, splat(0.282094795f));
  const __m512 p23 = _mm512_fmadd_ps(splat(0.175315976f), t, splat(0.246884575f));
  const __m512 p45 = _mm512_fmadd_ps(splat(-0.0592113581f), t, splat(0.0934624344f));
  const __m512 p67 = _mm512_fmadd_ps(splat(-0.454973989f), t, splat(0.132177045f));
  const __m512 p89 = _mm512_fmadd_ps(splat(-0.234733593f), t, splat(0.493694933f));
  const __m512 p810 = _mm512_fmadd_ps(splat(0.0431954333f), t2, p89);
  const __m512 p03 = _mm512_fmadd_ps(p23, t2, p01), p47 = _mm512_fmadd_ps(p67, t2, p45);
  const __m512 p07 = _mm512_fmadd_ps(p47, t4, p03);
  return _mm512_mul_ps(t, _mm512_fmadd_ps(p810, _mm512_mul_ps(t4, t4), p07));
}

// Phi(x) = 0.5 erfc(-x / sqrt 2) and, through `gauss`, the Gaussian factor e^{-x^2 / 2} that the
// density shares.
TERN_VMATH_V4 __m512 normal_cdf(__m512 x, __m512* gauss) {
  const __m512 z = _mm512_mul_ps(_mm512_abs_ps(x), splat(0.70710678118654752f));
  const __m512 t = _mm512_div_ps(splat(1.f), _mm512_fmadd_ps(z, splat(0.5f), splat(1.f)));
  *gauss = exp16(_mm512_mul_ps(_mm512_sub_ps(_mm512_setzero_ps(), z), z));
  const __m512 half_erfc = _mm512_mul_ps(_mm512_mul_ps(splat(0.5f), erfc_scaled(t)), *gauss);
  const __mmask16 negative = _mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_LT_OQ);
  return _mm512_mask_blend_ps(negative, _mm512_sub_ps(splat(1.f), half_erfc), half_erfc);
}

// x Phi(x).
TERN_VMATH_V4 __m512 gelu_erf(__m512 x) {
  __m512 gauss;
  return _mm512_mul_ps(x, normal_cdf(x, &gauss));
}

// Phi(x) + x phi(x), phi(x) = e^{-x^2 / 2} / sqrt(2 pi).
TERN_VMATH_V4 __m512 gelu_erf_derivative(__m512 x) {
  __m512 gauss;
  const __m512 cdf = normal_cdf(x, &gauss);
  return _mm512_fmadd_ps(x, _mm512_mul_ps(splat(0.39894228040143268f), gauss), cdf);
}

// The lanes of the last, partial vector of n values (n % 16 of them; all when n % 16 == 0).
TERN_VMATH_V4 __mmask16 tail_lanes(int64_t n) {
  const unsigned r = static_cast<unsigned>(n % 16);
  return r == 0 ? __mmask16{0xFFFF} : static_cast<__mmask16>((1u << r) - 1u);
}

// y = gelu(x) over n floats.
TERN_VMATH_V4 void gelu_erf_loop(const float* x, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) _mm512_storeu_ps(y + i, gelu_erf(_mm512_loadu_ps(x + i)));
  if (i < n) {
    const __mmask16 lanes = tail_lanes(n);
    _mm512_mask_storeu_ps(y + i, lanes, gelu_erf(_mm512_maskz_loadu_ps(lanes, x + i)));
  }
}

// out = dy * gelu'(x) over n floats.
TERN_VMATH_V4 void gelu_erf_grad_loop(const float* dy, const float* x, float* out, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512 d = gelu_erf_derivative(_mm512_loadu_ps(x + i));
    _mm512_storeu_ps(out + i, _mm512_mul_ps(_mm512_loadu_ps(dy + i), d));
  }
  if (i < n) {
    const __mmask16 lanes = tail_lanes(n);
    const __m512 d = gelu_erf_derivative(_mm512_maskz_loadu_ps(lanes, x + i));
    _mm512_mask_storeu_ps(out + i, lanes, _mm512_mul_ps(_mm512_maskz_loadu_ps(lanes, dy + i), d));
  }
}
}  // namespace tern::cpu::vmath_v4

#undef TERN_VMATH_V4
