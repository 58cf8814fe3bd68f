// Fast f32 kernels (AVX2) for the fused cross-entropies (sparse_softmax_cross_entropy,
// softmax_cross_entropy). Per row: max, then exp(x - max) written straight into dlogits while
// summing, then one scaling pass that also forms the loss: three vectorized passes instead of the
// reference's double-precision loops with two exps per element. Rows spread over OpenMP threads
// for big batches; rows are independent, so results do not depend on the thread count.
#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "tern/backends/cpu/cpu_isa.h"
#include "tern/backends/cpu/cpu_kernels.h"
#include "tern/base/row_error.h"

TERN_CPU_V3_BEGIN  // the code below is x86-64-v3 (cpu_isa.h)

namespace tern::cpu {
namespace {

using kernels::KernelContext;

constexpr int64_t kParallelThreshold = 32768;  // logits elements below which one thread runs

inline float horizontal_max(__m256 v) {
  __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  m = _mm_max_ps(m, _mm_movehl_ps(m, m));
  m = _mm_max_ss(m, _mm_shuffle_ps(m, m, 1));
  return _mm_cvtss_f32(m);
}

inline float horizontal_sum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));
  return _mm_cvtss_f32(s);
}

// e^x for 8 floats: x = n ln2 + r, |r| <= ln2 / 2, e^r by Cephes' degree-6 polynomial (a few
// ulp), 2^n through the exponent bits. x is clamped to [-87.3, 88.3] (normal results); NaN stays
// NaN because the clamps take x as their second operand.
inline __m256 exp256(__m256 x) {
  x = _mm256_max_ps(_mm256_set1_ps(-87.3365f), x);
  x = _mm256_min_ps(_mm256_set1_ps(88.3762f), x);
  __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                             _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
  __m256 p = _mm256_set1_ps(1.9875691500e-4f);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
  p = _mm256_fmadd_ps(p, _mm256_mul_ps(r, r), _mm256_add_ps(r, _mm256_set1_ps(1.f)));
  __m256i e =
      _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  return _mm256_mul_ps(p, _mm256_castsi256_ps(e));
}

// The row maximum; NaN if any element is NaN (so the whole row comes out NaN, as in ref).
inline float max_row(const float* x, int64_t c) {
  __m256 m = _mm256_set1_ps(-std::numeric_limits<float>::infinity());
  __m256 nan = _mm256_setzero_ps();
  int64_t j = 0;
  for (; j + 8 <= c; j += 8) {
    __m256 v = _mm256_loadu_ps(x + j);
    m = _mm256_max_ps(m, v);
    nan = _mm256_or_ps(nan, _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
  }
  float mx = horizontal_max(m);
  bool any_nan = _mm256_movemask_ps(nan) != 0;
  for (; j < c; ++j) {
    mx = std::max(mx, x[j]);
    any_nan = any_nan || std::isnan(x[j]);
  }
  return any_nan ? std::numeric_limits<float>::quiet_NaN() : mx;
}

inline float sum_row(const float* x, int64_t c) {
  __m256 a0 = _mm256_setzero_ps(), a1 = a0;
  int64_t j = 0;
  for (; j + 16 <= c; j += 16) {
    a0 = _mm256_add_ps(a0, _mm256_loadu_ps(x + j));
    a1 = _mm256_add_ps(a1, _mm256_loadu_ps(x + j + 8));
  }
  float s = horizontal_sum(_mm256_add_ps(a0, a1));
  for (; j < c; ++j) s += x[j];
  return s;
}

// dl[j] = exp(x[j] - max); returns {max, sum}.
inline std::pair<float, float> exp_row(const float* __restrict x, float* __restrict dl, int64_t c) {
  const float mx = max_row(x, c);
  const __m256 vmx = _mm256_set1_ps(mx);
  __m256 a0 = _mm256_setzero_ps();
  int64_t j = 0;
  for (; j + 8 <= c; j += 8) {
    __m256 e = exp256(_mm256_sub_ps(_mm256_loadu_ps(x + j), vmx));
    _mm256_storeu_ps(dl + j, e);
    a0 = _mm256_add_ps(a0, e);
  }
  float sum = horizontal_sum(a0);
  for (; j < c; ++j) {
    dl[j] = std::exp(x[j] - mx);
    sum += dl[j];
  }
  return {mx, sum};
}

// One row of each kernel below, in functions of their own: the OpenMP loops only call them (clang
// compiles an OpenMP region as a function of its own, outside the x86-64-v3 region of cpu_isa.h).

// Loss of row x[0, c) with label `label`; d = softmax(x) - onehot(label).
float sparse_xent_row(const float* xr, int64_t label, float* d, int64_t c) {
  auto [mx, sum] = exp_row(xr, d, c);
  const float inv = 1.f / sum;
#pragma omp simd
  for (int64_t j = 0; j < c; ++j) d[j] *= inv;
  d[label] -= 1.f;
  return std::log(sum) + mx - xr[label];
}

// Loss of row x[0, c) against the distribution z (any total); d = softmax(x) * sum(z) - z.
float xent_row(const float* xr, const float* zr, float* d, int64_t c) {
  auto [mx, sum] = exp_row(xr, d, c);
  const float zsum = sum_row(zr, c);
  const float lse = std::log(sum) + mx, scale = zsum / sum;
  __m256 acc = _mm256_setzero_ps();
  const __m256 vlse = _mm256_set1_ps(lse), vscale = _mm256_set1_ps(scale);
  int64_t j = 0;
  for (; j + 8 <= c; j += 8) {  // loss += z (lse - x); d = d * scale - z
    __m256 z8 = _mm256_loadu_ps(zr + j);
    acc = _mm256_fmadd_ps(z8, _mm256_sub_ps(vlse, _mm256_loadu_ps(xr + j)), acc);
    _mm256_storeu_ps(d + j, _mm256_fmsub_ps(_mm256_loadu_ps(d + j), vscale, z8));
  }
  float l = horizontal_sum(acc);
  for (; j < c; ++j) {
    l += zr[j] * (lse - xr[j]);
    d[j] = d[j] * scale - zr[j];
  }
  return l;
}

template <typename L>
void sparse_xent_f32(KernelContext& ctx) {
  const Tensor& logits = ctx.inputs[0];
  const float* x = logits.data<float>();
  const L* labels = ctx.inputs[1].data<L>();
  float* loss = ctx.outputs[0].data<float>();
  float* dl = ctx.outputs[1].data<float>();
  const int64_t rows = logits.shape()[0], c = logits.shape()[1];
  for (int64_t r = 0; r < rows; ++r) {  // errors cannot leave an OpenMP region: check first
    int64_t label = static_cast<int64_t>(labels[r]);
    if (label < 0 || label >= c) {
      throw_row_error(ErrorCode::kInvalidArgument, r, rows, "sparse_softmax_cross_entropy: label ",
                      label, " in row ", r, " is out of range [0, ", c, ")");
    }
  }
#pragma omp parallel for schedule(static) if (rows * c >= kParallelThreshold && !omp_in_parallel())
  for (int64_t r = 0; r < rows; ++r) {
    loss[r] = sparse_xent_row(x + r * c, static_cast<int64_t>(labels[r]), dl + r * c, c);
  }
}

void xent_f32(KernelContext& ctx) {
  const Tensor& logits = ctx.inputs[0];
  const float* x = logits.data<float>();
  const float* z = ctx.inputs[1].data<float>();
  float* loss = ctx.outputs[0].data<float>();
  float* dl = ctx.outputs[1].data<float>();
  const int64_t c = logits.shape()[logits.rank() - 1];
  const int64_t rows = logits.num_elements() / c;
#pragma omp parallel for schedule(static) if (rows * c >= kParallelThreshold && !omp_in_parallel())
  for (int64_t r = 0; r < rows; ++r) loss[r] = xent_row(x + r * c, z + r * c, dl + r * c, c);
}

}  // namespace

void register_softmax_xent_kernels(kernels::KernelRegistry& r) {
  kernels::add_fn_kernel(r, "sparse_softmax_cross_entropy", "cpu_vec", {DType::kF32},
                         kVectorPriority, [](KernelContext& ctx) {
                           if (ctx.inputs[1].dtype() == DType::kI32) {
                             sparse_xent_f32<int32_t>(ctx);
                           } else {
                             sparse_xent_f32<int64_t>(ctx);
                           }
                         });
  kernels::add_fn_kernel(r, "softmax_cross_entropy", "cpu_vec", {DType::kF32}, kVectorPriority,
                         xent_f32);
}

}  // namespace tern::cpu

TERN_CPU_V3_END
