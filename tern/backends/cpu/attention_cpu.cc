// Fast attention / attention_grad (tern/ops/attention_ops.cc) for f32 and bf16 heads: one
// (batch, head) pair per task, spread over OpenMP threads, each pair's [T, S] block computed and
// used while it is in the thread's cache. Forward: scores = scale q k^T (small_gemm on k^T packed
// once per pair), masked, a softmax per row (written to the saved-probabilities output, the
// block's only trip to memory), dropout with the dropout op's own tiles (dropout_loops.h), then the
// product with v, stored straight into [B, T, H, Dv]. Backward: dv = pd^T dout, dpd = dout v^T, the
// softmax's gradient per row, dq = scale ds k, dk = scale ds^T q, each into its [B, ., H, .]
// place. q, k, v and dout are read in place in f32 (strided rows of H * D) and converted per pair
// in bf16, whose results are rounded once. Each pair is one thread's work in a fixed order, so
// results do not depend on the thread count.
// Declines: a dropout whose per-pair block (T * S) is not a multiple of 64 elements (the Philox
// tiles and the mask's words would straddle pairs); ref runs those.
#include <omp.h>
#include <algorithm>
#include <cmath>
#include <type_traits>
#include <vector>

#include <immintrin.h>

#include "tern/backends/cpu/cpu_backend.h"
#include "tern/backends/cpu/cpu_isa.h"
#include "tern/backends/cpu/cpu_kernels.h"
#include "tern/backends/cpu/dropout_loops.h"
#include "tern/backends/cpu/elementwise_math.h"
#include "tern/backends/cpu/small_gemm.h"
#include "tern/backends/cpu/vmath_v4.h"
#include "tern/ops/attention_geometry.h"

TERN_CPU_V3_BEGIN  // the code below is x86-64-v3 (cpu_isa.h)

namespace tern::cpu {
namespace {

using kernels::KernelContext;

// The node's geometry, in the f32 the kernels compute in, and its optional mask input
// `mask_input`; q is input `first`.
struct Geometry : ops::AttentionGeometry {
  float scale_f, inv_keep_f;
  uint32_t threshold;
  const bool* mask = nullptr;  // [B, T, S] or null

  Geometry(const KernelContext& ctx, size_t first, size_t mask_input)
      : AttentionGeometry(ctx.inputs[first].shape(), ctx.inputs[first + 2].shape(), ctx.attrs),
        scale_f(static_cast<float>(scale)),
        inv_keep_f(static_cast<float>(inv_keep())),
        threshold(dropout_threshold()) {
    if (ctx.inputs.size() > mask_input) mask = ctx.inputs[mask_input].data<bool>();
  }
};

// Each thread's buffers, kept from call to call (a step's shapes repeat, so after the first run
// nothing is allocated; as fused_elementwise_cpu.cc's scratch). A forward and a backward never
// run at once on one thread.
struct Workspace {
  std::vector<float> q, k, v, dout, packed, scores, dropped, result;
  std::vector<float> sums;     // the calling thread's: attention_grad's per-pair bias sums
  std::vector<uint32_t> bits;  // a block's dropout mask when the op has no mask output
};

Workspace& workspace() {
  thread_local Workspace w;
  return w;
}

// `buf` with at least n elements (grown, never shrunk).
template <typename T>
T* at_least(std::vector<T>& buf, int64_t n) {
  if (buf.size() < static_cast<size_t>(n)) buf.resize(static_cast<size_t>(n));
  return buf.data();
}

// One head of a [B, L, H, W] tensor: rows of W elements, H * W apart.
template <typename T>
struct Head {
  const T* p;
  int64_t ld;
};

// The head as f32 rows: f32 is read in place, bf16 converted into `buf` (rows x width).
template <typename T>
Head<float> as_f32(Head<T> x, int64_t rows, int64_t width, std::vector<float>& buf) {
  if constexpr (std::is_same_v<T, float>) {
    return x;
  } else {
    float* out = at_least(buf, rows * width);
    for (int64_t r = 0; r < rows; ++r) {
      const T* src = x.p + r * x.ld;
      float* dst = out + r * width;
#pragma omp simd
      for (int64_t c = 0; c < width; ++c) dst[c] = static_cast<float>(src[c]);
    }
    return {out, width};
  }
}

// rows x width f32 (ld `width`) into a head of the output, rounded once for bf16.
template <typename T>
void store_head(const float* src, int64_t rows, int64_t width, T* dst, int64_t ld) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* in = src + r * width;
    T* out = dst + r * ld;
    if constexpr (std::is_same_v<T, float>) {
      std::copy(in, in + width, out);
    } else {
#pragma omp simd
      for (int64_t c = 0; c < width; ++c) out[c].bits = bfloat16::from_float(in[c]);
    }
  }
}

// Where a product's f32 rows go: straight into an f32 output's head, or a buffer that
// store_head rounds into a bf16 output's head afterwards.
struct Target {
  float* p;
  int64_t ld;
};

template <typename T>
Target f32_target(T* head, int64_t ld, int64_t rows, int64_t width, std::vector<float>& buf) {
  if constexpr (std::is_same_v<T, float>) {
    return {head, ld};
  } else {
    return {at_least(buf, rows * width), width};
  }
}

template <typename T>
void finish(Target target, T* head, int64_t ld, int64_t rows, int64_t width) {
  if constexpr (!std::is_same_v<T, float>) store_head(target.p, rows, width, head, ld);
}

// Replaces the scores of row i of pair (n, .) by -1e9 where the mask or causality forbids them.
[[gnu::always_inline]] inline void mask_row(const Geometry& g, int64_t n, int64_t i, float* row) {
  if (g.causal) {
    for (int64_t j = i + 1; j < g.s; ++j) row[j] = -1e9f;
  }
  if (g.mask) {
    const bool* m = g.mask + (n * g.t + i) * g.s;
#pragma omp simd
    for (int64_t j = 0; j < g.s; ++j) row[j] = vmath::select(m[j], row[j], -1e9f);
  }
}

// The row's maximum: sixteen running maxima (a loop GCC vectorizes, where a reduction over
// std::max stays scalar), then the tail. A NaN is skipped here and spreads through exp below.
[[gnu::always_inline]] inline float row_max(const float* row, int64_t s) {
  float lanes[16];
  std::fill(lanes, lanes + 16, -INFINITY);
  int64_t j = 0;
  for (; j + 16 <= s; j += 16) {
    for (int l = 0; l < 16; ++l) lanes[l] = row[j + l] > lanes[l] ? row[j + l] : lanes[l];
  }
  float max = -INFINITY;
  for (int l = 0; l < 16; ++l) max = std::max(max, lanes[l]);
  for (; j < s; ++j) max = std::max(max, row[j]);
  return max;
}

// Masks and normalizes the T rows of one pair's scores in place.
[[gnu::always_inline]] inline void softmax_rows_body(const Geometry& g, int64_t n, float* p) {
  for (int64_t i = 0; i < g.t; ++i) {
    float* row = p + i * g.s;
    mask_row(g, n, i, row);
    const float max = row_max(row, g.s);
    float sum = 0;
#pragma omp simd reduction(+ : sum)
    for (int64_t j = 0; j < g.s; ++j) {
      row[j] = vmath::exp(row[j] - max);
      sum += row[j];
    }
    const float inv = 1.0f / sum;
#pragma omp simd
    for (int64_t j = 0; j < g.s; ++j) row[j] *= inv;
  }
}

void softmax_rows_v3(const Geometry& g, int64_t n, float* p) {
  softmax_rows_body(g, n, p);
}

// The maskz forms with every lane on are the plain instructions; the plain intrinsics trip GCC
// 12's -Wmaybe-uninitialized (their undefined pass-through operand), as in small_gemm.cc.
constexpr __mmask16 kAll16 = 0xFFFF;

// The sum and the maximum of v's sixteen lanes (halves folded: 8, 4, 2, 1 lanes).
__attribute__((target("arch=x86-64-v4"))) inline __m128 half4_v4(__m512 v, bool max) {
  const __m256 lo = _mm512_maskz_extractf32x8_ps(0xFF, v, 0),
               hi = _mm512_maskz_extractf32x8_ps(0xFF, v, 1);
  const __m256 a = max ? _mm256_max_ps(lo, hi) : _mm256_add_ps(lo, hi);
  const __m128 a_lo = _mm256_castps256_ps128(a), a_hi = _mm256_extractf128_ps(a, 1);
  return max ? _mm_max_ps(a_lo, a_hi) : _mm_add_ps(a_lo, a_hi);
}

__attribute__((target("arch=x86-64-v4"))) inline float sum16_v4(__m512 v) {
  const __m128 b = half4_v4(v, false);
  const __m128 c = _mm_add_ps(b, _mm_movehl_ps(b, b));
  return _mm_cvtss_f32(_mm_add_ss(c, _mm_shuffle_ps(c, c, 1)));
}

__attribute__((target("arch=x86-64-v4"))) inline float max16_v4(__m512 v) {
  const __m128 b = half4_v4(v, true);
  const __m128 c = _mm_max_ps(b, _mm_movehl_ps(b, b));
  return _mm_cvtss_f32(_mm_max_ss(c, _mm_shuffle_ps(c, c, 1)));
}

// softmax_rows_body in AVX-512 registers for rows of a multiple of 16 scores: the max and the
// sum run in one register each and are reduced once per row (GCC's epilogues for the loops above
// fold sixteen lanes one scalar at a time, as long as a 128-score row's exps), the exps on
// vmath_v4::exp16 (vmath::exp in an `omp simd` loop, even with 512-bit vectors preferred, left
// W6's attention forward at 2.10-2.14 ms against 2.00-2.06 with it).
__attribute__((target("arch=x86-64-v4"))) void softmax_rows_v4_whole(const Geometry& g, int64_t n,
                                                                     float* p) {
  for (int64_t i = 0; i < g.t; ++i) {
    float* row = p + i * g.s;
    mask_row(g, n, i, row);
    __m512 max = _mm512_set1_ps(-INFINITY);
    for (int64_t j = 0; j < g.s; j += 16)
      max = _mm512_maskz_max_ps(kAll16, _mm512_loadu_ps(row + j), max);
    const __m512 m = _mm512_set1_ps(max16_v4(max));
    __m512 sum = _mm512_setzero_ps();
    for (int64_t j = 0; j < g.s; j += 16) {
      const __m512 e = vmath_v4::exp16(_mm512_sub_ps(_mm512_loadu_ps(row + j), m));
      _mm512_storeu_ps(row + j, e);
      sum = _mm512_add_ps(sum, e);
    }
    const __m512 inv = _mm512_set1_ps(1.0f / sum16_v4(sum));
    for (int64_t j = 0; j < g.s; j += 16) {
      _mm512_storeu_ps(row + j, _mm512_mul_ps(_mm512_loadu_ps(row + j), inv));
    }
  }
}

// The same for AVX-512 (16 lanes per exp) for other row lengths.
__attribute__((target("arch=x86-64-v4"), flatten)) void softmax_rows_v4(const Geometry& g,
                                                                        int64_t n, float* p) {
  softmax_rows_body(g, n, p);
}

void softmax_rows(const Geometry& g, int64_t n, float* p) {
  static const bool v4 = cpu_runs_v4_variants();
  if (v4 && g.s % 16 == 0) {
    softmax_rows_v4_whole(g, n, p);
  } else if (v4) {
    softmax_rows_v4(g, n, p);
  } else {
    softmax_rows_v3(g, n, p);
  }
}

// Masked-out scores get no gradient (where's gradient), even in an all-masked row.
[[gnu::always_inline]] inline void mask_grad_row(const Geometry& g, int64_t n, int64_t i,
                                                 float* row) {
  if (g.causal) std::fill(row + std::min(i + 1, g.s), row + g.s, 0.f);
  if (g.mask) {
    const bool* m = g.mask + (n * g.t + i) * g.s;
#pragma omp simd
    for (int64_t j = 0; j < g.s; ++j) row[j] = vmath::select(m[j], row[j], 0.f);
  }
}

// The softmax's gradient of one pair in place: ds = p * (dp - sum(dp * p)) per row.
[[gnu::always_inline]] inline void softmax_grad_rows_body(const Geometry& g, int64_t n,
                                                          const float* p, float* ds) {
  for (int64_t i = 0; i < g.t; ++i) {
    float* row = ds + i * g.s;
    const float* pr = p + i * g.s;
    float dot = 0;
#pragma omp simd reduction(+ : dot)
    for (int64_t j = 0; j < g.s; ++j) dot += row[j] * pr[j];
#pragma omp simd
    for (int64_t j = 0; j < g.s; ++j) row[j] = pr[j] * (row[j] - dot);
    mask_grad_row(g, n, i, row);
  }
}

// The same in AVX-512 registers for rows of a multiple of 16 scores (the dot reduced once per
// row, as softmax_rows_v4_whole).
__attribute__((target("arch=x86-64-v4"))) void softmax_grad_rows_v4_whole(const Geometry& g,
                                                                          int64_t n, const float* p,
                                                                          float* ds) {
  for (int64_t i = 0; i < g.t; ++i) {
    float* row = ds + i * g.s;
    const float* pr = p + i * g.s;
    __m512 acc = _mm512_setzero_ps();
    for (int64_t j = 0; j < g.s; j += 16) {
      acc = _mm512_fmadd_ps(_mm512_loadu_ps(row + j), _mm512_loadu_ps(pr + j), acc);
    }
    const __m512 dot = _mm512_set1_ps(sum16_v4(acc));
    for (int64_t j = 0; j < g.s; j += 16) {
      _mm512_storeu_ps(row + j, _mm512_mul_ps(_mm512_loadu_ps(pr + j),
                                              _mm512_sub_ps(_mm512_loadu_ps(row + j), dot)));
    }
    mask_grad_row(g, n, i, row);
  }
}

void softmax_grad_rows_v3(const Geometry& g, int64_t n, const float* p, float* ds) {
  softmax_grad_rows_body(g, n, p, ds);
}

__attribute__((target("arch=x86-64-v4"), flatten)) void softmax_grad_rows_v4(const Geometry& g,
                                                                             int64_t n,
                                                                             const float* p,
                                                                             float* ds) {
  softmax_grad_rows_body(g, n, p, ds);
}

void softmax_grad_rows(const Geometry& g, int64_t n, const float* p, float* ds) {
  static const bool v4 = cpu_runs_v4_variants();
  if (v4 && g.s % 16 == 0) {
    softmax_grad_rows_v4_whole(g, n, p, ds);
  } else if (v4) {
    softmax_grad_rows_v4(g, n, p, ds);
  } else {
    softmax_grad_rows_v3(g, n, p, ds);
  }
}

// What a forward call writes besides out (the saved probabilities and dropout's mask, outputs 1
// and 2 with save_probs) and dropout's seed and offset.
struct ForwardSaves {
  uint64_t offset, seed;
  float* probs = nullptr;          // [pairs, T, S] with save_probs
  uint32_t* mask_words = nullptr;  // with save_probs and dropout

  ForwardSaves(const KernelContext& ctx, const Geometry& g)
      : offset(static_cast<uint64_t>(ctx.inputs[3].data<int64_t>()[0])),
        seed(static_cast<uint64_t>(ctx.attrs.get_int("seed"))) {
    if (!ctx.attrs.get_bool("save_probs")) return;
    probs = ctx.outputs[1].data<float>();
    if (g.rate > 0) mask_words = reinterpret_cast<uint32_t*>(ctx.outputs[2].data<int32_t>());
  }

  // Where pair's scores (then probabilities) go: the saved output, or the thread's buffer.
  float* scores(const Geometry& g, Workspace& w, int64_t pair) const {
    return probs ? probs + pair * g.block() : at_least(w.scores, g.block());
  }

  // The pair's probabilities p after dropout (p itself without it): the dropout op's own tiles on
  // elements pair * block .. of [B, H, T, S], the mask into the saved output or a buffer.
  const float* dropout(const Geometry& g, Workspace& w, int64_t pair, const float* p) const {
    if (g.rate <= 0) return p;
    const int64_t blk = g.block();
    uint32_t* bits = mask_words ? mask_words + pair * blk / 32 : at_least(w.bits, blk / 32);
    float* dropped = at_least(w.dropped, blk);
    dropout_f32(seed, offset, g.threshold, g.inv_keep_f, pair * blk, blk, p, dropped, bits);
    return dropped;
  }
};

// The saved probabilities p of a pair as the forward's product used them: after dropout (the
// mask's bits applied into the thread's buffer), or p itself without it.
const float* dropped_probs(const Geometry& g, Workspace& w, const float* p, const uint32_t* bits) {
  if (g.rate <= 0) return p;
  float* dropped = at_least(w.dropped, g.block());
  dropout_apply_f32(bits, g.block(), g.inv_keep_f, p, dropped);
  return dropped;
}

// The bf16 forms on small_gemm_bf16 (below; where bf16_products_native(), small_gemm.h).
bool even_heads(const Geometry& g);
void attention_bf16(KernelContext& ctx, const Geometry& g);
void attention_grad_bf16(KernelContext& ctx, const Geometry& g);

template <typename T>
void attention_typed(KernelContext& ctx) {
  const Geometry g(ctx, 0, 4);
  if constexpr (std::is_same_v<T, bfloat16>) {
    if (bf16_products_native() && even_heads(g)) return attention_bf16(ctx, g);
  }
  const T *q = ctx.inputs[0].data<T>(), *k = ctx.inputs[1].data<T>(), *v = ctx.inputs[2].data<T>();
  T* out = ctx.outputs[0].data<T>();
  const ForwardSaves saves(ctx, g);
#pragma omp parallel if (g.pairs() > 1 && !omp_in_parallel())
  {
    Workspace& w = workspace();
    float* kt = at_least(w.packed, g.d * g.s);
#pragma omp for schedule(static)
    for (int64_t pair = 0; pair < g.pairs(); ++pair) {
      const int64_t n = pair / g.h, hd = pair % g.h;
      const Head<float> qh =
          as_f32(Head<T>{q + g.at(n, 0, g.t, hd, g.d), g.h * g.d}, g.t, g.d, w.q);
      const Head<float> kh =
          as_f32(Head<T>{k + g.at(n, 0, g.s, hd, g.d), g.h * g.d}, g.s, g.d, w.k);
      const Head<float> vh =
          as_f32(Head<T>{v + g.at(n, 0, g.s, hd, g.dv), g.h * g.dv}, g.s, g.dv, w.v);
      transpose_f32(g.s, g.d, kh.p, kh.ld, kt, g.s);
      float* p = saves.scores(g, w, pair);
      small_gemm(false, g.t, g.s, g.d, g.scale_f, qh.p, qh.ld, kt, g.s, p, g.s);
      softmax_rows(g, n, p);
      const float* a = saves.dropout(g, w, pair, p);
      T* o = out + g.at(n, 0, g.t, hd, g.dv);
      const Target dst = f32_target(o, g.h * g.dv, g.t, g.dv, w.result);
      small_gemm(false, g.t, g.dv, g.s, 1.0f, a, g.s, vh.p, vh.ld, dst.p, dst.ld);
      finish(dst, o, g.h * g.dv, g.t, g.dv);
    }
  }
}

// out[c] = the sum of the rows of a rows x width block (ld `ld`): even and odd rows apart, each in
// row order, then added (a fixed order, whatever the CPU).
void sum_rows_v3(const float* p, int64_t ld, int64_t rows, int64_t width, float* out) {
  for (int64_t c = 0; c < width; ++c) {
    float even = 0, odd = 0;
    int64_t r = 0;
    for (; r + 2 <= rows; r += 2) even += p[r * ld + c], odd += p[(r + 1) * ld + c];
    if (r < rows) even += p[r * ld + c];
    out[c] = even + odd;
  }
}

// The same on AVX-512 registers, 64 columns at a time (the two row chains in eight registers:
// the additions no longer wait on each other); other widths as sum_rows_v3.
__attribute__((target("arch=x86-64-v4"))) void sum_rows_v4(const float* p, int64_t ld, int64_t rows,
                                                           int64_t width, float* out) {
  int64_t c0 = 0;
  for (; c0 + 64 <= width; c0 += 64) {
    __m512 even[4], odd[4];
    for (int v = 0; v < 4; ++v) even[v] = odd[v] = _mm512_setzero_ps();
    int64_t r = 0;
    for (; r + 2 <= rows; r += 2) {
      const float* a = p + r * ld + c0;
      for (int v = 0; v < 4; ++v) {
        even[v] = _mm512_add_ps(even[v], _mm512_loadu_ps(a + 16 * v));
        odd[v] = _mm512_add_ps(odd[v], _mm512_loadu_ps(a + ld + 16 * v));
      }
    }
    if (r < rows) {
      for (int v = 0; v < 4; ++v)
        even[v] = _mm512_add_ps(even[v], _mm512_loadu_ps(p + r * ld + c0 + 16 * v));
    }
    for (int v = 0; v < 4; ++v) _mm512_storeu_ps(out + c0 + 16 * v, _mm512_add_ps(even[v], odd[v]));
  }
  if (c0 < width) sum_rows_v3(p + c0, ld, rows, width - c0, out + c0);
}

void sum_rows(const float* p, int64_t ld, int64_t rows, int64_t width, float* out) {
  static const bool v4 = cpu_runs_v4_variants();
  v4 ? sum_rows_v4(p, ld, rows, width, out) : sum_rows_v3(p, ld, rows, width, out);
}

// bias_sums' outputs 3, 4, 5 ([H, D], [H, D], [H, Dv]): per head, the pairs' sums (`partials`,
// [pairs, D + D + Dv]: dq's, dk's, then dv's) added in batch order, whatever thread made them.
void add_pair_sums(KernelContext& ctx, const Geometry& g, const float* partials) {
  const int64_t width = g.d + g.d + g.dv;
  const int64_t at[3] = {0, g.d, 2 * g.d}, widths[3] = {g.d, g.d, g.dv};
  for (int k = 0; k < 3; ++k) {
    float* out = ctx.outputs[static_cast<size_t>(3 + k)].data<float>();
    for (int64_t hd = 0; hd < g.h; ++hd) {
      float* o = out + hd * widths[k];
      std::fill(o, o + widths[k], 0.f);
      for (int64_t n = 0; n < g.b; ++n) {
        const float* p = partials + (n * g.h + hd) * width + at[k];
#pragma omp simd
        for (int64_t c = 0; c < widths[k]; ++c) o[c] += p[c];
      }
    }
  }
}

template <typename T>
void attention_grad_typed(KernelContext& ctx) {
  const Geometry g(ctx, 1, 6);
  if constexpr (std::is_same_v<T, bfloat16>) {
    if (bf16_products_native() && even_heads(g)) return attention_grad_bf16(ctx, g);
  }
  const T* dout = ctx.inputs[0].data<T>();
  const T *q = ctx.inputs[1].data<T>(), *k = ctx.inputs[2].data<T>(), *v = ctx.inputs[3].data<T>();
  const float* probs = ctx.inputs[4].data<float>();
  const uint32_t* mask_words = reinterpret_cast<const uint32_t*>(ctx.inputs[5].data<int32_t>());
  T *dq = ctx.outputs[0].data<T>(), *dk = ctx.outputs[1].data<T>(), *dv = ctx.outputs[2].data<T>();
  const int64_t blk = g.block();
  // bias_sums (f32 heads): each pair's rows of dq, dk, dv summed while in cache.
  const int64_t sums_width = g.d + g.d + g.dv;
  float* partials = ctx.attrs.get_bool("bias_sums")
                        ? at_least(workspace().sums, g.pairs() * sums_width)
                        : nullptr;
#pragma omp parallel if (g.pairs() > 1 && !omp_in_parallel())
  {
    Workspace& w = workspace();
    float* vt = at_least(w.packed, g.dv * g.s);
    float* ds = at_least(w.scores, blk);
#pragma omp for schedule(static)
    for (int64_t pair = 0; pair < g.pairs(); ++pair) {
      const int64_t n = pair / g.h, hd = pair % g.h;
      const int64_t at_t = g.at(n, 0, g.t, hd, 1), at_s = g.at(n, 0, g.s, hd, 1);
      const Head<float> oh = as_f32(Head<T>{dout + at_t * g.dv, g.h * g.dv}, g.t, g.dv, w.dout);
      const Head<float> qh = as_f32(Head<T>{q + at_t * g.d, g.h * g.d}, g.t, g.d, w.q);
      const Head<float> kh = as_f32(Head<T>{k + at_s * g.d, g.h * g.d}, g.s, g.d, w.k);
      const Head<float> vh = as_f32(Head<T>{v + at_s * g.dv, g.h * g.dv}, g.s, g.dv, w.v);
      const float* p = probs + pair * blk;
      const uint32_t* bits = mask_words + pair * blk / 32;
      const float* a = dropped_probs(g, w, p, bits);
      // dv = pd^T dout
      T* dvh = dv + at_s * g.dv;
      const Target dv_dst = f32_target(dvh, g.h * g.dv, g.s, g.dv, w.result);
      small_gemm(true, g.s, g.dv, g.t, 1.0f, a, g.s, oh.p, oh.ld, dv_dst.p, dv_dst.ld);
      if (partials)
        sum_rows(dv_dst.p, dv_dst.ld, g.s, g.dv, partials + pair * sums_width + 2 * g.d);
      finish(dv_dst, dvh, g.h * g.dv, g.s, g.dv);
      // dpd = dout v^T, then the dropout's and the softmax's gradients in place: ds.
      transpose_f32(g.s, g.dv, vh.p, vh.ld, vt, g.s);
      small_gemm(false, g.t, g.s, g.dv, 1.0f, oh.p, oh.ld, vt, g.s, ds, g.s);
      if (g.rate > 0) dropout_apply_f32(bits, blk, g.inv_keep_f, ds, ds);
      softmax_grad_rows(g, n, p, ds);
      // dq = scale ds k, dk = scale ds^T q
      T* dqh = dq + at_t * g.d;
      const Target dq_dst = f32_target(dqh, g.h * g.d, g.t, g.d, w.result);
      small_gemm(false, g.t, g.d, g.s, g.scale_f, ds, g.s, kh.p, kh.ld, dq_dst.p, dq_dst.ld);
      if (partials) sum_rows(dq_dst.p, dq_dst.ld, g.t, g.d, partials + pair * sums_width);
      finish(dq_dst, dqh, g.h * g.d, g.t, g.d);
      T* dkh = dk + at_s * g.d;
      const Target dk_dst = f32_target(dkh, g.h * g.d, g.s, g.d, w.result);
      small_gemm(true, g.s, g.d, g.t, g.scale_f, ds, g.s, qh.p, qh.ld, dk_dst.p, dk_dst.ld);
      if (partials) sum_rows(dk_dst.p, dk_dst.ld, g.s, g.d, partials + pair * sums_width + g.d);
      finish(dk_dst, dkh, g.h * g.d, g.s, g.d);
    }
  }
  if (partials) add_pair_sums(ctx, g, partials);
}

// --- bf16 heads multiplied in bf16 (small_gemm_bf16) ---
// Where bf16_products_native() (small_gemm.h: AVX512_BF16's dot product at twice the f32 FMA's
// FLOPs, bf16 contractions not widened) and every head dimension is
// even (pairs along k), bf16 heads skip the f32 copies: q, k, v and dout are read in place as
// pairs, and the f32 probabilities and scores' gradient are rounded to bf16 for their products,
// as Keras rounds them to the compute dtype under mixed_bfloat16. The softmax, dropout and their
// gradients stay in f32.

bool even_heads(const Geometry& g) {
  return g.t % 2 == 0 && g.s % 2 == 0 && g.d % 2 == 0 && g.dv % 2 == 0;
}

// A head's bf16 rows viewed as pairs (d even): row stride h * d / 2 words.
const uint32_t* pairs(const bfloat16* head) {
  return reinterpret_cast<const uint32_t*>(head);
}

template <typename T>
uint32_t* words(std::vector<T>& buf, int64_t n) {
  static_assert(sizeof(T) == sizeof(uint32_t));
  return reinterpret_cast<uint32_t*>(at_least(buf, n));
}

void attention_bf16(KernelContext& ctx, const Geometry& g) {
  const bfloat16 *q = ctx.inputs[0].data<bfloat16>(), *k = ctx.inputs[1].data<bfloat16>(),
                 *v = ctx.inputs[2].data<bfloat16>();
  bfloat16* out = ctx.outputs[0].data<bfloat16>();
  const ForwardSaves saves(ctx, g);
  const int64_t dp = g.d / 2, sp = g.s / 2;
#pragma omp parallel if (g.pairs() > 1 && !omp_in_parallel())
  {
    Workspace& w = workspace();
    uint32_t* kt = words(w.packed, dp * g.s);  // k^T: [D / 2, S] pairs
    uint32_t* vp = words(w.v, sp * g.dv);      // v's rows paired: [S / 2, Dv]
    uint32_t* ap = words(w.k, g.t * sp);       // the probabilities rounded: [T, S / 2] pairs
    float* result = at_least(w.result, g.t * g.dv);
#pragma omp for schedule(static)
    for (int64_t pair = 0; pair < g.pairs(); ++pair) {
      const int64_t n = pair / g.h, hd = pair % g.h;
      const bfloat16* qh = q + g.at(n, 0, g.t, hd, g.d);
      const bfloat16* kh = k + g.at(n, 0, g.s, hd, g.d);
      const bfloat16* vh = v + g.at(n, 0, g.s, hd, g.dv);
      transpose_f32(g.s, dp, reinterpret_cast<const float*>(kh), g.h * dp,
                    reinterpret_cast<float*>(kt), g.s);
      float* p = saves.scores(g, w, pair);
      small_gemm_bf16(false, g.t, g.s, dp, g.scale_f, pairs(qh), g.h * dp, kt, g.s, p, g.s);
      softmax_rows(g, n, p);
      const float* a = saves.dropout(g, w, pair, p);
      round_rows_f32(g.t, g.s, a, g.s, reinterpret_cast<bfloat16*>(ap), g.s);
      pair_rows_bf16(g.s, g.dv, vh, g.h * g.dv, vp, g.dv);
      small_gemm_bf16(false, g.t, g.dv, sp, 1.0f, ap, sp, vp, g.dv, result, g.dv);
      round_rows_f32(g.t, g.dv, result, g.dv, out + g.at(n, 0, g.t, hd, g.dv), g.h * g.dv);
    }
  }
}

void attention_grad_bf16(KernelContext& ctx, const Geometry& g) {
  const bfloat16* dout = ctx.inputs[0].data<bfloat16>();
  const bfloat16 *q = ctx.inputs[1].data<bfloat16>(), *k = ctx.inputs[2].data<bfloat16>(),
                 *v = ctx.inputs[3].data<bfloat16>();
  const float* probs = ctx.inputs[4].data<float>();
  const uint32_t* mask_words = reinterpret_cast<const uint32_t*>(ctx.inputs[5].data<int32_t>());
  bfloat16 *dq = ctx.outputs[0].data<bfloat16>(), *dk = ctx.outputs[1].data<bfloat16>(),
           *dv = ctx.outputs[2].data<bfloat16>();
  const int64_t blk = g.block(), tp = g.t / 2, sp = g.s / 2, dvp = g.dv / 2;
  const int64_t sums_width = g.d + g.d + g.dv;  // bias_sums: as attention_grad_typed
  float* partials = ctx.attrs.get_bool("bias_sums")
                        ? at_least(workspace().sums, g.pairs() * sums_width)
                        : nullptr;
#pragma omp parallel if (g.pairs() > 1 && !omp_in_parallel())
  {
    Workspace& w = workspace();
    float* ds = at_least(w.scores, blk);
    uint32_t* vt = words(w.packed, dvp * g.s);  // v^T: [Dv / 2, S] pairs
    float* result = at_least(w.result, std::max(g.s, g.t) * std::max(g.d, g.dv));
#pragma omp for schedule(static)
    for (int64_t pair = 0; pair < g.pairs(); ++pair) {
      const int64_t n = pair / g.h, hd = pair % g.h;
      const int64_t at_t = g.at(n, 0, g.t, hd, 1), at_s = g.at(n, 0, g.s, hd, 1);
      const bfloat16 *oh = dout + at_t * g.dv, *qh = q + at_t * g.d, *kh = k + at_s * g.d,
                     *vh = v + at_s * g.dv;
      const float* p = probs + pair * blk;
      const uint32_t* bits = mask_words + pair * blk / 32;
      const float* a = dropped_probs(g, w, p, bits);
      // dv = pd^T dout: pd's rows paired (A transposed), dout's rows paired.
      uint32_t* pa = words(w.q, tp * g.s);
      uint32_t* po = words(w.dout, tp * g.dv);
      pair_rows_f32(g.t, g.s, a, g.s, pa, g.s);
      pair_rows_bf16(g.t, g.dv, oh, g.h * g.dv, po, g.dv);
      small_gemm_bf16(true, g.s, g.dv, tp, 1.0f, pa, g.s, po, g.dv, result, g.dv);
      if (partials) sum_rows(result, g.dv, g.s, g.dv, partials + pair * sums_width + 2 * g.d);
      round_rows_f32(g.s, g.dv, result, g.dv, dv + at_s * g.dv, g.h * g.dv);
      // dpd = dout v^T (dout in place), then the dropout's and the softmax's gradients: ds.
      transpose_f32(g.s, dvp, reinterpret_cast<const float*>(vh), g.h * dvp,
                    reinterpret_cast<float*>(vt), g.s);
      small_gemm_bf16(false, g.t, g.s, dvp, 1.0f, pairs(oh), g.h * dvp, vt, g.s, ds, g.s);
      if (g.rate > 0) dropout_apply_f32(bits, blk, g.inv_keep_f, ds, ds);
      softmax_grad_rows(g, n, p, ds);
      // dq = scale ds k: ds rounded, k's rows paired.
      uint32_t* dsr = words(w.k, g.t * sp);
      uint32_t* pk = words(w.v, sp * g.d);
      round_rows_f32(g.t, g.s, ds, g.s, reinterpret_cast<bfloat16*>(dsr), g.s);
      pair_rows_bf16(g.s, g.d, kh, g.h * g.d, pk, g.d);
      small_gemm_bf16(false, g.t, g.d, sp, g.scale_f, dsr, sp, pk, g.d, result, g.d);
      if (partials) sum_rows(result, g.d, g.t, g.d, partials + pair * sums_width);
      round_rows_f32(g.t, g.d, result, g.d, dq + at_t * g.d, g.h * g.d);
      // dk = scale ds^T q: ds's rows paired (A transposed), q's rows paired.
      uint32_t* pds = words(w.q, tp * g.s);
      uint32_t* pq = words(w.dout, tp * g.d);
      pair_rows_f32(g.t, g.s, ds, g.s, pds, g.s);
      pair_rows_bf16(g.t, g.d, qh, g.h * g.d, pq, g.d);
      small_gemm_bf16(true, g.s, g.d, tp, g.scale_f, pds, g.s, pq, g.d, result, g.d);
      if (partials) sum_rows(result, g.d, g.s, g.d, partials + pair * sums_width + g.d);
      round_rows_f32(g.s, g.d, result, g.d, dk + at_s * g.d, g.h * g.d);
    }
  }
  if (partials) add_pair_sums(ctx, g, partials);
}

std::string decline_attention(const kernels::KernelSignature& sig) {
  const bool grad = sig.op->name == "attention_grad";
  const Shape& q = sig.inputs[grad ? 1 : 0].shape;
  const Shape& v = sig.inputs[grad ? 3 : 2].shape;
  if (sig.attrs->get_float("rate") > 0 && (q[1] * v[1]) % 64 != 0) {
    return "dropout over a [T, S] block that is not a multiple of 64 elements";
  }
  return "";
}

template <typename Fn>
void by_dtype(DType dtype, Fn fn) {
  if (dtype == DType::kBF16) return fn(bfloat16{});
  return fn(float{});
}

}  // namespace

void register_attention_kernels(kernels::KernelRegistry& r) {
  kernels::add_fn_kernel(
      r, "attention", "cpu_vec", {DType::kF32, DType::kBF16}, kVectorPriority,
      [](KernelContext& ctx) {
        by_dtype(ctx.inputs[0].dtype(), [&](auto tag) { attention_typed<decltype(tag)>(ctx); });
      },
      decline_attention);
  kernels::add_fn_kernel(
      r, "attention_grad", "cpu_vec", {DType::kF32, DType::kBF16}, kVectorPriority,
      [](KernelContext& ctx) {
        by_dtype(ctx.inputs[1].dtype(),
                 [&](auto tag) { attention_grad_typed<decltype(tag)>(ctx); });
      },
      decline_attention);
}

}  // namespace tern::cpu

TERN_CPU_V3_END
