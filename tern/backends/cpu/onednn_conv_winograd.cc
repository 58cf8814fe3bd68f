// Winograd convolutions F(2x2, 3x3) and F(4x4, 3x3) on NHWC tensors (declared in onednn_conv.h):
// tern's tile transforms around batched GEMMs on oneDNN's matmul. Notation of Lavin and Gray,
// "Fast Algorithms for Convolutional Neural Networks" (2016): an m x m output tile is
// A^T [(G g G^T) . (B^T d B)] A for the (m + 2) x (m + 2) input tile d and the 3x3 filter g, with
// for m = 2 (points 0, 1, -1)
//   B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1], G = [1 0 0; .5 .5 .5; .5 -.5 .5; 0 0 1],
//   A^T = [1 1 1 0; 0 1 -1 -1],
// and for m = 4 (points 0, 1, -1, 2, -2)
//   B^T = [4 0 -5 0 1 0; 0 -4 -4 1 1 0; 0 4 -4 -1 1 0; 0 -2 -1 2 1 0; 0 2 -1 -2 1 0;
//          0 4 0 -5 0 1],
//   G = [1/4 0 0; -1/6 -1/6 -1/6; -1/6 1/6 -1/6; 1/24 1/12 1/6; 1/24 -1/12 1/6; 0 0 1],
//   A^T = [1 1 1 1 1 0; 0 1 -1 2 -2 0; 0 1 1 4 4 0; 0 1 -1 8 -8 1].
// Each of the (m + 2)^2 positions xi of a transformed tile is one GEMM over the channels:
//   forward          M[xi] (tiles x c_out) = V[xi] (tiles x c_in) U[xi] (c_in x c_out),
//   filter gradient  dU[xi] (c_in x c_out) = V[xi]^T W[xi] (tiles x c_out), W = A dy A^T,
//                    then dg = G^T dU G
// (V, W and M are stored tile-major, see tiles_desc), over chunks of images whose V, W or M cross
// L3, or, where the transformed filter fits a core's L2 (winograd_fused), per block of
// kFusedTiles tiles in each thread's cache (fused_forward, fused_filter_gradient: small_gemm's
// products; per step, W5's 64-channel forward nodes 9.1-10.1 -> 7.6-8.5 ms, filter gradients
// 10.1-15.5 -> 9.3-10.3 ms, W4's three directions ~3-4 ms less in all; blocks of 12, 18 and 24
// tiles ran alike, tern's prefetch of the next block's pixels and the transforms rewritten in
// AVX-512 intrinsics did not help: the f32 forward 2.3-2.4 -> 2.6-2.8 ms), or, for layers of
// few tiles whose transformed filter is large (winograd_columns), per block of kColumnBlock
// channels with the block's filter transform in each thread's cache (columns_forward,
// columns_filter_gradient, columns_input_gradient);
// the input gradient is the forward convolution of dy with the filter flipped in H and W (O and
// I swapped): its transform is that of the filter with its taps in reverse order, each position's
// matrix transposed (transposed_filter_transform; with bf16 products, filter_transform of the taps
// in reverse order, read transposed by oneDNN's bf16 GEMM: for 512 channels at 4x4, batch 32,
// 2.4-2.5 ms with the transposing transform, 1.7-1.8 so), or, where the forward's output has
// fewer F(4x4, 3x3) tiles than its input (VALID layers, fused), or per block of channels, the
// adjoint of the forward's tiles: W = A dy A^T, dV = W U^T, dx += B dV B^T over the pixels each
// tile reads (fused_input_gradient, columns_input_gradient; WinogradInputGradient). bf16 tensors
// with F(2x2, 3x3) multiply their transforms rounded to bf16 (winograd_products: V, W and U in
// bf16, M and dU in f32). Every transform is a loop over channels (NHWC keeps them contiguous),
// built for x86-64-v3 and for AVX-512; the code below runs only where cpu_isa() is x86-64-v3
// (winograd_tile). Under a 2x2 / 2 max pooling (pooled_winograd_cpu.cc), the fused forward pools
// each output tile in the thread's cache (pooled_output_tile: the pooled values and argmax), and
// the fused gradients expand each dy tile from the pooled dy and argmax as they read it
// (pooled_gradient_tile), so the convolution-sized output and gradient are never stored.
// One file past 800 lines (~1600) on purpose: the chunked, fused and per-block-of-channels forms
// and the input gradient's adjoints all build on the 1-D transforms, the per-tile bodies, the
// filter rows and the channel loops, templates in its anonymous namespace compiled for
// x86-64-v3 by the TERN_CPU_V3 region (cpu_isa.h), which applies to the functions a file itself
// defines after its #includes. Splitting a form out would move those templates into a header
// that its users include inside their region, against cpu_isa.h's rule that header templates
// keep baseline code (check_cpu_isa.py checks the objects for it).
#include <omp.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdlib>
#include <string_view>
#include <type_traits>
#include <vector>

#include <immintrin.h>

#include "tern/backends/cpu/cpu_isa.h"
#include "tern/backends/cpu/elementwise_loops.h"
#include "tern/backends/cpu/onednn_conv.h"
#include "tern/backends/cpu/small_gemm.h"

namespace tern::cpu::onednn {
namespace {

int64_t tiles_of(int64_t size, int m) {
  return (size + m - 1) / m;
}
int64_t tiles_per_image(const ops::Conv2dGeometry& g, int m) {
  return tiles_of(g.out_h, m) * tiles_of(g.out_w, m);
}
constexpr int64_t positions(int m) {
  return (m + 2) * (m + 2);
}

// TERN_CONV_WINOGRAD: unset or "auto", "0" (off), "2" or "4" (that tile wherever it applies).
int winograd_setting() {
  static const int setting = [] {
    const char* v = std::getenv("TERN_CONV_WINOGRAD");
    const std::string_view s = v == nullptr ? "auto" : v;
    TERN_CHECK_ARG(s == "auto" || s == "0" || s == "2" || s == "4", "TERN_CONV_WINOGRAD='", s,
                   "': expected auto, 0 (off), 2 (F(2x2, 3x3) only) or 4 (F(4x4, 3x3) only)");
    return s == "auto" ? -1 : s[0] - '0';
  }();
  return setting;
}

}  // namespace

// Baseline code (called before anything checks the CPU); the rest of the file is x86-64-v3.
int64_t winograd_chunk_images(const ops::Conv2dGeometry& g, int m) {
  const int64_t image_bytes = positions(m) * tiles_per_image(g, m) * std::max(g.c_in, g.c_out) * 4;
  return std::clamp<int64_t>(kWinogradChunkBytes / image_bytes, 1, g.n);
}

// TERN_WINOGRAD_FUSED: unset or "1" (where it applies), "0" (off: chunks of images always).
bool winograd_fused(const ops::Conv2dGeometry& g, int m) {
  static const bool enabled =
      env_switch("TERN_WINOGRAD_FUSED", "fused where the filter fits", "chunks of images");
  return enabled && m == 4 && positions(m) * g.c_in * g.c_out * 4 <= kFusedFilterBytes;
}

namespace {

// winograd_tile's rule without winograd_columns (which only f32 layers take).
int winograd_tile_rule(const ops::Conv2dGeometry& g, bool kept_filter) {
  const int setting = winograd_setting();
  if (setting == 0 || cpu_isa() < CpuIsa::kX86_64_v3) return 0;
  // Fewer channels where F(4x4, 3x3) runs fused: its transforms then stay in cache.
  const bool few_fused = g.c_in >= kWinogradFusedMinChannels &&
                         g.c_out >= kWinogradFusedMinChannels && setting != 2 && !kept_filter &&
                         std::min(g.out_h, g.out_w) >= kWinogradF4MinSize &&
                         cpu_runs_v4_variants() && winograd_fused(g, 4);
  if (g.kh != 3 || g.kw != 3 || g.stride_h != 1 || g.stride_w != 1 || g.dil_h != 1 ||
      g.dil_w != 1 || g.groups != 1 ||
      ((g.c_in < kWinogradMinChannels || g.c_out < kWinogradMinChannels) && !few_fused) ||
      g.n * tiles_per_image(g, 2) < kWinogradMinTiles) {
    return 0;
  }
  if (few_fused) return 4;
  int m = setting;
  if (m < 0) {
    m = std::min(g.out_h, g.out_w) >= kWinogradF4MinSize ? 4 : 2;
    if (m == 4 && kept_filter && g.n * tiles_per_image(g, 4) < kWinogradF4MinTilesKept) m = 2;
  }
  // The transformed tiles of one chunk of images, and the transformed filter.
  const int64_t images = winograd_chunk_images(g, m);
  const int64_t tiles = images * tiles_per_image(g, m);
  const int64_t largest =
      positions(m) * 4 * std::max({tiles * g.c_in, tiles * g.c_out, g.c_in * g.c_out});
  return largest <= kWinogradMaxBytes ? m : 0;
}

}  // namespace

// TERN_WINOGRAD_COLUMNS: unset or "1" (where it applies), "0" (off).
bool winograd_columns(const ops::Conv2dGeometry& g) {
  static const bool enabled = env_switch("TERN_WINOGRAD_COLUMNS", "per block of output channels",
                                         "F(2x2, 3x3) or chunks of images");
  const int setting = winograd_setting();
  if (!enabled || (setting != -1 && setting != 4) || !cpu_runs_v4_variants() ||
      winograd_tile_rule(g, false) == 0 || winograd_fused(g, 4) ||
      std::min(g.out_h, g.out_w) < kWinogradF4ColumnsMinSize) {
    return false;
  }
  const int64_t tiles = g.n * tiles_per_image(g, 4);
  return positions(4) * tiles * std::max(g.c_in, g.c_out) * 4 <= kWinogradColumnsMaxBytes;
}

int winograd_tile(const ops::Conv2dGeometry& g, DType dtype, bool kept_filter) {
  if (dtype != DType::kF32) return 0;
  if (!kept_filter && winograd_columns(g)) return 4;
  return winograd_tile_rule(g, kept_filter);
}

namespace {

// TERN_WINOGRAD_BF16_PRODUCTS: unset or "1" (bf16 F(2x2, 3x3) where it applies), "0" (those
// layers on oneDNN's bf16 kernels, exact products, or F(4x4, 3x3) with f32 products).
bool winograd_bf16_products_enabled() {
  static const bool enabled = env_switch("TERN_WINOGRAD_BF16_PRODUCTS", "bf16 F(2x2, 3x3) Winograd",
                                         "oneDNN's bf16 kernels");
  return enabled;
}

// Whether bf16 F(2x2, 3x3) (bf16 products) may take `g`: tern's f32 Winograd would, with at least
// kWinogradBf16MinTiles 2x2 tiles, TERN_WINOGRAD_BF16_PRODUCTS on.
bool bf16_products_apply(const ops::Conv2dGeometry& g, int f32_tile) {
  return winograd_bf16_products_enabled() && f32_tile != 0 &&
         g.n * tiles_per_image(g, 2) >= kWinogradBf16MinTiles;
}

// F(4x4, 3x3) fused (winograd_fused) on this CPU.
bool runs_fused(const ops::Conv2dGeometry& g) {
  return cpu_runs_v4_variants() && winograd_fused(g, 4);
}

}  // namespace

int winograd_tile_bf16(const ops::Conv2dGeometry& g, bool kept_filter) {
  winograd_bf16_products_enabled();  // read first: a bad value is an error on any CPU
  if (!bf16_native_on_amd()) return 0;
  const int m = winograd_tile_rule(g, kept_filter);
  // F(4x4, 3x3) fused, below kWinogradBf16MinChannels, or forced (TERN_CONV_WINOGRAD=4).
  if (m == 4 && (runs_fused(g) || std::min(g.c_in, g.c_out) < kWinogradBf16MinChannels ||
                 winograd_setting() == 4)) {
    return 4;
  }
  if (bf16_products_apply(g, m)) return 2;
  return m == 4 ? 4 : 0;
}

bool WinogradInputGradient::applies(const ops::Conv2dGeometry& g, DType dtype) {
  static const bool enabled =
      env_switch("TERN_WINOGRAD_ADJOINT", "the forward's adjoint", "the flipped filter's forward");
  if (!enabled || dtype != DType::kF32 || winograd_tile(g, dtype) != 4) return false;
  if (winograd_columns(g)) return true;
  if (!runs_fused(g)) return false;
  const std::optional<ops::Conv2dGeometry> fg = flipped_forward_geometry(g);
  return fg && tiles_per_image(g, 4) < tiles_per_image(*fg, 4);
}

int winograd_input_gradient_tile_bf16(const ops::Conv2dGeometry& fg) {
  if (!bf16_native_on_amd()) return 0;
  const int m = winograd_tile_rule(fg, false);
  if (m == 4 && runs_fused(fg)) return 4;
  return bf16_products_apply(fg, m) && winograd_setting() != 4 ? 2 : 0;
}

}  // namespace tern::cpu::onednn

TERN_CPU_V3_BEGIN  // the code below is x86-64-v3 (cpu_isa.h)

namespace tern::cpu::onednn {
namespace {

// The 1-D transforms of F(m, 3) over arrays: input B^T d, output A^T m, filter G g, gradient
// A e (dy's tile to the transformed domain), filter gradient G^T q, input adjoint B v (a
// transformed tile's gradient back to the input tile's).
template <int M>
struct F;

template <>
struct F<2> {
  static constexpr int kA = 4;
  static void input(const float* d, float* v) {
    v[0] = d[0] - d[2];
    v[1] = d[1] + d[2];
    v[2] = d[2] - d[1];
    v[3] = d[1] - d[3];
  }
  static void input_adjoint(const float* v, float* d) {
    d[0] = v[0];
    d[1] = v[1] - v[2] + v[3];
    d[2] = v[1] + v[2] - v[0];
    d[3] = -v[3];
  }
  static void output(const float* m, float* y) {
    y[0] = m[0] + m[1] + m[2];
    y[1] = m[1] - m[2] - m[3];
  }
  static void filter(const float* g, float* u) {
    u[0] = g[0];
    u[1] = 0.5f * (g[0] + g[1] + g[2]);
    u[2] = 0.5f * (g[0] - g[1] + g[2]);
    u[3] = g[2];
  }
  static void gradient(const float* e, float* w) {
    w[0] = e[0];
    w[1] = e[0] + e[1];
    w[2] = e[0] - e[1];
    w[3] = -e[1];
  }
  static void filter_gradient(const float* q, float* g) {
    g[0] = q[0] + 0.5f * (q[1] + q[2]);
    g[1] = 0.5f * (q[1] - q[2]);
    g[2] = 0.5f * (q[1] + q[2]) + q[3];
  }
};

template <>
struct F<4> {
  static constexpr int kA = 6;
  static void input(const float* d, float* v) {
    v[0] = 4.0f * d[0] - 5.0f * d[2] + d[4];
    v[1] = -4.0f * (d[1] + d[2]) + d[3] + d[4];
    v[2] = 4.0f * (d[1] - d[2]) - d[3] + d[4];
    v[3] = -2.0f * (d[1] - d[3]) - d[2] + d[4];
    v[4] = 2.0f * (d[1] - d[3]) - d[2] + d[4];
    v[5] = 4.0f * d[1] - 5.0f * d[3] + d[5];
  }
  static void input_adjoint(const float* v, float* d) {
    const float s = v[1] + v[2], p = v[1] - v[2], r = v[3] + v[4], q = v[3] - v[4];
    d[0] = 4.0f * v[0];
    d[1] = -4.0f * p - 2.0f * q + 4.0f * v[5];
    d[2] = -5.0f * v[0] - 4.0f * s - r;
    d[3] = p + 2.0f * q - 5.0f * v[5];
    d[4] = v[0] + s + r;
    d[5] = v[5];
  }
  static void output(const float* m, float* y) {
    const float a = m[1] + m[2], b = m[1] - m[2], c = m[3] + m[4], d = m[3] - m[4];
    y[0] = m[0] + a + c;
    y[1] = b + 2.0f * d;
    y[2] = a + 4.0f * c;
    y[3] = b + 8.0f * d + m[5];
  }
  static void filter(const float* g, float* u) {
    const float a = g[0] + g[2], b = (1.0f / 24) * g[0] + (1.0f / 6) * g[2];
    u[0] = 0.25f * g[0];
    u[1] = (-1.0f / 6) * (a + g[1]);
    u[2] = (-1.0f / 6) * (a - g[1]);
    u[3] = b + (1.0f / 12) * g[1];
    u[4] = b - (1.0f / 12) * g[1];
    u[5] = g[2];
  }
  static void gradient(const float* e, float* w) {
    const float a = e[0] + e[2], b = e[1] + e[3], c = e[0] + 4.0f * e[2],
                d = 2.0f * e[1] + 8.0f * e[3];
    w[0] = e[0];
    w[1] = a + b;
    w[2] = a - b;
    w[3] = c + d;
    w[4] = c - d;
    w[5] = e[3];
  }
  static void filter_gradient(const float* q, float* g) {
    const float s12 = q[1] + q[2], d12 = q[2] - q[1], s34 = q[3] + q[4], d34 = q[3] - q[4];
    g[0] = 0.25f * q[0] - (1.0f / 6) * s12 + (1.0f / 24) * s34;
    g[1] = (1.0f / 6) * d12 + (1.0f / 12) * d34;
    g[2] = (1.0f / 6) * (s34 - s12) + q[5];
  }
};

// An `omp simd` loop over channels [0, n) of `body(c)`, in its x86-64-v3 and AVX-512 builds. The
// body is copied first: its pointers are then locals that the stores cannot change, so GCC keeps
// them in registers and vectorizes (through the caller's object it ran a scalar loop). simdlen:
// one register of f32 per value; for bf16 tensors GCC chose 32 lanes (two registers per value,
// spilled: the bf16 forward of 64 channels at 32x32 took 3.1 ms against 2.0).
template <typename Body>
void channel_loop_v3(const Body& body, int64_t n) {
  const Body b = body;
#pragma omp simd simdlen(8)
  for (int64_t c = 0; c < n; ++c) b(c);
}

template <typename Body>
TERN_CPU_V4_LOOP void channel_loop_v4(const Body& body, int64_t n) {
  const Body b = body;
#pragma omp simd simdlen(16)
  for (int64_t c = 0; c < n; ++c) b(c);
}

template <typename Body>
void channel_loop(bool v4, const Body& body, int64_t n) {
  if (v4) {
    channel_loop_v4(body, n);
  } else {
    channel_loop_v3(body, n);
  }
}

// The six 2-D transforms below share one shape (the 1-D transform along rows, then along
// columns) but stay written out: one generic functor over the 1-D transform, with the tile
// copied through local arrays, ran 3-5x slower (GCC no longer vectorized it).

// V = B^T d B for the tile d whose pixels are in[0..A*A) (row-major; a row of zeros where the
// tile leaves the image), position xi written to out[xi] + c.
template <int M, typename T, typename P = float>
struct InputTransform {
  static constexpr int A = F<M>::kA;
  const T* in[A * A];
  P* out[A * A];
  void operator()(int64_t c) const {
    float t[A * A], d[A], v[A];
#pragma GCC unroll 8
    for (int i = 0; i < A; ++i) {  // rows: d B
#pragma GCC unroll 8
      for (int j = 0; j < A; ++j) d[j] = to_f32(in[i * A + j][c]);
      F<M>::input(d, t + i * A);
    }
#pragma GCC unroll 8
    for (int j = 0; j < A; ++j) {  // columns: B^T (d B)
#pragma GCC unroll 8
      for (int i = 0; i < A; ++i) d[i] = t[i * A + j];
      F<M>::input(d, v);
#pragma GCC unroll 8
      for (int i = 0; i < A; ++i) store_f32(out[i * A + j][c], v[i]);
    }
  }
};

// The M x M output tile A^T m A from in[xi] + c, plus bias[c] and, with Accumulate, what out
// holds (a residual), then with Relu relu (keeping NaN: NaN < 0 is false); out[r] is a scratch
// row for a pixel outside the output. No branch in the body: GCC vectorizes it only so.
template <int M, bool Accumulate, bool Relu, typename T>
struct OutputTransform {
  static constexpr int A = F<M>::kA;
  const float* in[A * A];
  T* out[M * M];
  const T* bias;
  void operator()(int64_t c) const {
    float r[A * M], m[A], y[M];
#pragma GCC unroll 8
    for (int i = 0; i < A; ++i) {  // rows: m A
#pragma GCC unroll 8
      for (int j = 0; j < A; ++j) m[j] = in[i * A + j][c];
      F<M>::output(m, r + i * M);
    }
    const float b = to_f32(bias[c]);
#pragma GCC unroll 8
    for (int j = 0; j < M; ++j) {  // columns: A^T (m A)
#pragma GCC unroll 8
      for (int i = 0; i < A; ++i) m[i] = r[i * M + j];
      F<M>::output(m, y);
#pragma GCC unroll 8
      for (int i = 0; i < M; ++i) {
        T* o = out[i * M + j];
        float v = y[i] + b;
        if constexpr (Accumulate) v += to_f32(o[c]);
        if constexpr (Relu) v = v < 0.0f ? 0.0f : v;
        store_f32(o[c], v);
      }
    }
  }
};

// U = G g G^T for the 3x3 filter taps in[0..9) + c, position xi written to out[xi] + c.
template <int M, typename T, typename P = float>
struct FilterTransform {
  static constexpr int A = F<M>::kA;
  const T* in[9];
  P* out[A * A];
  void operator()(int64_t c) const {
    float s[3 * A], g[A], u[A];
#pragma GCC unroll 8
    for (int i = 0; i < 3; ++i) {  // rows: g G^T
#pragma GCC unroll 8
      for (int j = 0; j < 3; ++j) g[j] = to_f32(in[i * 3 + j][c]);
      F<M>::filter(g, s + i * A);
    }
#pragma GCC unroll 8
    for (int j = 0; j < A; ++j) {  // columns: G (g G^T)
#pragma GCC unroll 8
      for (int i = 0; i < 3; ++i) g[i] = s[i * A + j];
      F<M>::filter(g, u);
#pragma GCC unroll 8
      for (int i = 0; i < A; ++i) store_f32(out[i * A + j][c], u[i]);
    }
  }
};

// W = A e A^T for the M x M dy tile e whose pixels are in[0..M*M) (zeros outside the output).
template <int M, typename T, typename P = float>
struct GradientTransform {
  static constexpr int A = F<M>::kA;
  const T* in[M * M];
  P* out[A * A];
  void operator()(int64_t c) const {
    float r[M * A], e[A], w[A];
#pragma GCC unroll 8
    for (int i = 0; i < M; ++i) {  // rows: e A^T
#pragma GCC unroll 8
      for (int j = 0; j < M; ++j) e[j] = to_f32(in[i * M + j][c]);
      F<M>::gradient(e, r + i * A);
    }
#pragma GCC unroll 8
    for (int j = 0; j < A; ++j) {  // columns: A (e A^T)
#pragma GCC unroll 8
      for (int i = 0; i < M; ++i) e[i] = r[i * A + j];
      F<M>::gradient(e, w);
#pragma GCC unroll 8
      for (int i = 0; i < A; ++i) store_f32(out[i * A + j][c], w[i]);
    }
  }
};

// dg = G^T q G for the positions in[xi] + c of the transformed filter gradient, written to the
// 3x3 taps out[0..9) + c.
template <int M, typename T>
struct FilterGradientTransform {
  static constexpr int A = F<M>::kA;
  const float* in[A * A];
  T* out[9];
  void operator()(int64_t c) const {
    float s[A * 3], q[A], g[3];
#pragma GCC unroll 8
    for (int i = 0; i < A; ++i) {  // rows: q G
#pragma GCC unroll 8
      for (int j = 0; j < A; ++j) q[j] = in[i * A + j][c];
      F<M>::filter_gradient(q, s + i * 3);
    }
#pragma GCC unroll 8
    for (int j = 0; j < 3; ++j) {  // columns: G^T (q G)
#pragma GCC unroll 8
      for (int i = 0; i < A; ++i) q[i] = s[i * 3 + j];
      F<M>::filter_gradient(q, g);
#pragma GCC unroll 8
      for (int i = 0; i < 3; ++i) store_f32(out[i * 3 + j][c], g[i]);
    }
  }
};

// The gradient of an input tile, B v B^T for the positions in[xi] + c of its transformed
// gradient, plus what add[i] + c holds (the tile's pixels that earlier tiles wrote, else zeros),
// written to out[i] + c (the tile's pixels, or a scratch row outside the image).
template <int M>
struct InputGradientTransform {
  static constexpr int A = F<M>::kA;
  const float* in[A * A];
  const float* add[A * A];
  float* out[A * A];
  void operator()(int64_t c) const {
    float t[A * A], v[A], d[A];
#pragma GCC unroll 8
    for (int i = 0; i < A; ++i) {  // rows: v B^T
#pragma GCC unroll 8
      for (int j = 0; j < A; ++j) v[j] = in[i * A + j][c];
      F<M>::input_adjoint(v, t + i * A);
    }
#pragma GCC unroll 8
    for (int j = 0; j < A; ++j) {  // columns: B (v B^T)
#pragma GCC unroll 8
      for (int i = 0; i < A; ++i) v[i] = t[i * A + j];
      F<M>::input_adjoint(v, d);
#pragma GCC unroll 8
      for (int i = 0; i < A; ++i) out[i * A + j][c] = d[i] + add[i * A + j][c];
    }
  }
};

// A per-thread row of c zeros of type T (f32 zeros, whose bytes are bf16 zeros too).
template <typename T>
const T* zero_channels(int64_t c) {
  thread_local std::vector<float> zeros;
  if (static_cast<int64_t>(zeros.size()) < c) zeros.assign(static_cast<size_t>(c), 0.0f);
  return reinterpret_cast<const T*>(zeros.data());
}

// A per-thread row of c floats that output pixels outside the image are written to (and, with
// a residual, read from: its values are finite, and discarded).
template <typename T>
T* scratch_channels(int64_t c) {
  thread_local std::vector<float> row;
  if (static_cast<int64_t>(row.size()) < c) row.assign(static_cast<size_t>(c), 0.0f);
  return reinterpret_cast<T*>(row.data());
}

// Tile t's image and tile row and column (tiles numbered image by image, row-major).
struct TileAt {
  int64_t n, ty, tx;
};
template <int M>
TileAt tile_at(const ops::Conv2dGeometry& g, int64_t t) {
  const int64_t th = tiles_of(g.out_h, M), tw = tiles_of(g.out_w, M);
  return {t / (th * tw), (t / tw) % th, t % tw};
}

// Tile t's V (A*A rows of c_in floats, c_in apart, from v) of x (nhwc) for `g`; `zeros` a row of
// c_in zeros for pixels outside the image.
template <int M, typename T, typename P>
void input_tile(const ops::Conv2dGeometry& g, bool v4, const T* x, int64_t t, const T* zeros,
                P* v) {
  constexpr int A = F<M>::kA;
  const int64_t c = g.c_in;
  const auto [n, ty, tx] = tile_at<M>(g, t);
  InputTransform<M, T, P> body;
  for (int i = 0; i < A; ++i) {
    const int64_t ih = M * ty - g.pad_top + i;
    for (int j = 0; j < A; ++j) {
      const int64_t iw = M * tx - g.pad_left + j;
      const bool inside = ih >= 0 && ih < g.h && iw >= 0 && iw < g.w;
      body.in[i * A + j] = inside ? x + ((n * g.h + ih) * g.w + iw) * c : zeros;
      body.out[i * A + j] = v + (i * A + j) * c;
    }
  }
  channel_loop(v4, body, c);
}

// V [tiles, A*A, c_in] of x (nhwc) for `g`.
template <int M, typename T, typename P>
void input_transform(const ops::Conv2dGeometry& g, bool v4, const T* x, P* v) {
  constexpr int A = F<M>::kA;
  const int64_t tiles = g.n * tiles_per_image(g, M), c = g.c_in;
  const T* zeros = zero_channels<T>(c);
#pragma omp parallel for schedule(static) if (conv_loop_parallel(tiles * A * A * c * 4))
  for (int64_t t = 0; t < tiles; ++t) input_tile<M>(g, v4, x, t, zeros, v + t * A * A * c);
}

// Row i of an HWIO filter [3, 3, a, b] (`flip`: its taps in reverse order), its columns
// [b0, b0 + nb): the U of each position xi written to out + xi * position_stride. The filter
// transforms below are loops of it in their layouts.
template <int M, typename T, typename P>
void filter_row(int64_t a, int64_t b, bool v4, const T* filter, bool flip, int64_t i, int64_t b0,
                int64_t nb, P* out, int64_t position_stride) {
  FilterTransform<M, T, P> body;
  for (int k = 0; k < 9; ++k) body.in[k] = filter + ((flip ? 8 - k : k) * a + i) * b + b0;
  for (int xi = 0; xi < F<M>::kA * F<M>::kA; ++xi) body.out[xi] = out + xi * position_stride;
  channel_loop(v4, body, nb);
}

// U [A*A, a, b] of an HWIO filter [3, 3, a, b] (`flip`: its taps in reverse order).
template <int M, typename T, typename P>
void filter_transform(int64_t a, int64_t b, bool v4, const T* filter, P* u, bool flip = false) {
  constexpr int A = F<M>::kA;
#pragma omp parallel for schedule(static) if (conv_loop_parallel(a * b * A * A * 4))
  for (int64_t i = 0; i < a; ++i) filter_row<M>(a, b, v4, filter, flip, i, 0, b, u + i * b, a * b);
}

// The columns [b0, b0 + nb) of an HWIO filter [3, 3, a, b]'s U as [a, A*A, nb]: row i's
// positions side by side (winograd_columns' layout). In [A*A, a, nb] the A*A rows a transform
// writes lie a * nb floats apart (128 KB for 512 rows of 64), the same cache sets in L1 and L2:
// ResNet-18's 512-channel forward took 4.0 ms against 2.5 with F(2x2, 3x3), 60% of it in the
// filter's transform. The rows' taps, a short piece of each filter row (256 bytes of 2 KB for
// 64 of 512 columns), are prefetched kFilterPrefetchRows rows ahead: the hardware's prefetchers
// missed them (the forward 2.2 -> 1.85 ms per node, `kernel_ab_bench`, 4 independent nodes;
// 1 to 8 rows ahead ran alike).
constexpr int64_t kFilterPrefetchRows = 2;
// With rows [r0, r1) (r1 >= 0), those rows only: u [r1 - r0, A*A, nb]; with ld >= nb, each
// position's nb floats ld apart.
template <int M, typename T>
void filter_columns(int64_t a, int64_t b, bool v4, const T* filter, int64_t b0, int64_t nb,
                    float* u, int64_t r0 = 0, int64_t r1 = -1, int64_t ld = -1) {
  constexpr int A = F<M>::kA;
  if (r1 < 0) r1 = a;
  if (ld < 0) ld = nb;
  u -= r0 * A * A * ld;
  for (int64_t i = r0; i < r1; ++i) {
    if (i + kFilterPrefetchRows < r1) {
      for (int k = 0; k < 9; ++k) {
        const T* ahead = filter + (k * a + i + kFilterPrefetchRows) * b + b0;
        for (int64_t c = 0; c < nb; c += 64 / sizeof(T)) __builtin_prefetch(ahead + c);
      }
    }
    filter_row<M>(a, b, v4, filter, false, i, b0, nb, u + i * A * A * ld, ld);
  }
}

// U [A*A, b, a] (each position's matrix transposed) of an HWIO filter [3, 3, a, b], with `flip`
// its taps in reverse order: the flipped filter of an input gradient as a dense GEMM operand
// (without `flip`, the filter of the forward's adjoint, fused_input_gradient). oneDNN's
// GEMM read the transposed form of filter_transform 20% slower (16 x [128 x 512] x [512 x 512],
// ResNet-18's 4x4 layers as F(2x2, 3x3): 2.84 against 2.35 ms). In blocks of 16 x 16 channels:
// the transforms of 16 rows into a buffer that stays in L1, then each position's 16 x 16 block
// transposed into place, the blocks along a row of the result one after another (blocks of
// 64 or 128 rows, whose buffer leaves L1, were 10-30% slower). With rows [a0, a0 + na) of the
// filter (na >= 0): those rows only, as [b, A*A, na] (winograd_columns' layout, see
// filter_columns).
template <int M, typename T>
void transposed_filter_transform(int64_t a, int64_t b, bool v4, const T* filter, float* u,
                                 bool flip, int64_t a0 = 0, int64_t na = -1) {
  constexpr int A = F<M>::kA;
  constexpr int64_t kBlock = 16;
  const bool columns = na >= 0;
  if (!columns) na = a;
  const int64_t blocks_a = (na + kBlock - 1) / kBlock, blocks_b = (b + kBlock - 1) / kBlock;
#pragma omp parallel for schedule(static) if (conv_loop_parallel(na * b * A * A * 4))
  for (int64_t blk = 0; blk < blocks_a * blocks_b; ++blk) {
    const int64_t i0 = blk % blocks_a * kBlock, c0 = blk / blocks_a * kBlock,
                  rows = std::min(kBlock, na - i0), cols = std::min(kBlock, b - c0);
    alignas(64) float block[A * A][kBlock][kBlock];
    for (int64_t i = 0; i < rows; ++i) {
      filter_row<M>(a, b, v4, filter, flip, a0 + i0 + i, c0, cols, block[0][i], kBlock * kBlock);
    }
    for (int xi = 0; xi < A * A; ++xi) {
      if (columns) {
        transpose_f32(rows, cols, block[xi][0], kBlock, u + (c0 * A * A + xi) * na + i0,
                      A * A * na);
      } else {
        transpose_f32(rows, cols, block[xi][0], kBlock, u + (xi * b + c0) * a + i0, a);
      }
    }
  }
}

// Tile t of y (nhwc) from its M (A*A rows of c_out floats, c_out apart, from m), plus bias (not
// null), the residual y holds (Accumulate), relu; with channels [c0, c0 + nc) (nc >= 0), those
// channels of the tile from m's A*A rows of nc floats.
template <int M, bool Accumulate, bool Relu, typename T>
void output_tile(const ops::Conv2dGeometry& g, bool v4, const float* m, const T* bias, T* y,
                 int64_t t, int64_t c0 = 0, int64_t nc = -1) {
  constexpr int A = F<M>::kA;
  const int64_t k = g.c_out;
  if (nc < 0) nc = k;
  const auto [n, ty, tx] = tile_at<M>(g, t);
  OutputTransform<M, Accumulate, Relu, T> body;
  for (int xi = 0; xi < A * A; ++xi) body.in[xi] = m + xi * nc;
  for (int i = 0; i < M; ++i) {
    for (int j = 0; j < M; ++j) {
      const int64_t oh = M * ty + i, ow = M * tx + j;
      body.out[i * M + j] = oh < g.out_h && ow < g.out_w
                                ? y + ((n * g.out_h + oh) * g.out_w + ow) * k + c0
                                : scratch_channels<T>(k);
    }
  }
  body.bias = bias + c0;
  channel_loop(v4, body, nc);
}

// The output tiles of M (nhwc y), plus the bias (zeros when null), the residual y holds
// (Accumulate), relu.
template <int M, bool Accumulate, bool Relu, typename T>
void output_transform(const ops::Conv2dGeometry& g, bool v4, const float* m, const T* bias, T* y) {
  constexpr int A = F<M>::kA;
  const int64_t tiles = g.n * tiles_per_image(g, M), k = g.c_out;
  if (bias == nullptr) bias = zero_channels<T>(k);
#pragma omp parallel for schedule(static) if (conv_loop_parallel(tiles * M * M * k * 4))
  for (int64_t t = 0; t < tiles; ++t) {
    output_tile<M, Accumulate, Relu>(g, v4, m + t * A * A * k, bias, y, t);
  }
}

template <int M, typename T>
void output_transform(const ops::Conv2dGeometry& g, bool v4, const float* m, const T* bias,
                      bool accumulate, bool relu, T* y) {
  if (accumulate) {
    relu ? output_transform<M, true, true>(g, v4, m, bias, y)
         : output_transform<M, true, false>(g, v4, m, bias, y);
  } else {
    relu ? output_transform<M, false, true>(g, v4, m, bias, y)
         : output_transform<M, false, false>(g, v4, m, bias, y);
  }
}

// W (A*A rows of k floats, k apart, from w) of the M x M dy tile whose pixels are rows[0..M*M).
template <int M, typename T, typename P>
void gradient_rows(bool v4, const T* const* rows, int64_t k, P* w) {
  constexpr int A = F<M>::kA;
  GradientTransform<M, T, P> body;
  for (int i = 0; i < M * M; ++i) body.in[i] = rows[i];
  for (int xi = 0; xi < A * A; ++xi) body.out[xi] = w + xi * k;
  channel_loop(v4, body, k);
}

// Tile t's W (A*A rows of c_out floats, c_out apart, from w) of dy (nhwc) for `g`; `zeros` a row
// of c_out zeros for pixels outside the output.
template <int M, typename T, typename P>
void gradient_tile(const ops::Conv2dGeometry& g, bool v4, const T* dy, int64_t t, const T* zeros,
                   P* w) {
  const int64_t k = g.c_out;
  const auto [n, ty, tx] = tile_at<M>(g, t);
  const T* rows[M * M];
  for (int i = 0; i < M; ++i) {
    for (int j = 0; j < M; ++j) {
      const int64_t oh = M * ty + i, ow = M * tx + j;
      rows[i * M + j] =
          oh < g.out_h && ow < g.out_w ? dy + ((n * g.out_h + oh) * g.out_w + ow) * k : zeros;
    }
  }
  gradient_rows<M>(v4, rows, k, w);
}

// One 2x2 window of a max pooling over n channels, with AVX-512 (the pooled forms run only
// fused, which only AVX-512 CPUs do): per channel its first maximum in window order (a NaN being
// the maximum, as pool::beats) to y, its position (0-3) to argmax. GCC's vectorization of
// pool::pool_2x2's loop (u8 and f32 lanes at once) ran on 4-lane registers here, as did an
// `omp simd` body; its narrow stores, read back at once by the tile transforms as whole
// registers, also stalled their loads.
__attribute__((target("arch=x86-64-v4"))) void pool_window(const float* x00, const float* x01,
                                                           const float* x10, const float* x11,
                                                           float* y, uint8_t* argmax, int64_t n) {
  const float* x[4] = {x00, x01, x10, x11};
  for (int64_t c = 0; c < n; c += 16) {
    const __mmask16 lanes = n - c >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << (n - c)) - 1);
    __m512 best = _mm512_maskz_loadu_ps(lanes, x[0] + c);
    __m512i pos = _mm512_setzero_si512();
    for (int i = 1; i < 4; ++i) {
      const __m512 v = _mm512_maskz_loadu_ps(lanes, x[i] + c);
      const __mmask16 more =
          _mm512_cmp_ps_mask(v, best, _CMP_GT_OQ) |
          (_mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q) & _mm512_cmp_ps_mask(best, best, _CMP_ORD_Q));
      best = _mm512_mask_mov_ps(best, more, v);
      pos = _mm512_mask_mov_epi32(pos, more, _mm512_set1_epi32(i));
    }
    _mm512_mask_storeu_ps(y + c, lanes, best);
    _mm512_mask_cvtepi32_storeu_epi8(argmax + c, lanes, pos);
  }
}

// The gradient of such a window over n channels: dy where its argmax points, +0 at the other
// three pixels. Whether every argmax was below 4 (else its dy went nowhere).
__attribute__((target("arch=x86-64-v4"))) bool unpool_window(const float* dy, const uint8_t* argmax,
                                                             float* d00, float* d01, float* d10,
                                                             float* d11, int64_t n) {
  float* d[4] = {d00, d01, d10, d11};
  __mmask16 bad = 0;
  for (int64_t c = 0; c < n; c += 16) {
    const __mmask16 lanes = n - c >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << (n - c)) - 1);
    const __m512i p = _mm512_maskz_cvtepu8_epi32(lanes, _mm_maskz_loadu_epi8(lanes, argmax + c));
    const __m512 v = _mm512_maskz_loadu_ps(lanes, dy + c);
    bad |= _mm512_mask_cmpgt_epu32_mask(lanes, p, _mm512_set1_epi32(3));
    for (int i = 0; i < 4; ++i) {
      const __mmask16 here = _mm512_cmpeq_epi32_mask(p, _mm512_set1_epi32(i));
      _mm512_mask_storeu_ps(d[i] + c, lanes, _mm512_maskz_mov_ps(here, v));
    }
  }
  return bad == 0;
}

// The calling thread's buffer of one M x M tile of n channels.
template <int M>
float* tile_buffer(int64_t n) {
  thread_local std::vector<float> tile;
  if (static_cast<int64_t>(tile.size()) < M * M * n) tile.resize(static_cast<size_t>(M * M * n));
  return tile.data();
}

// Tile t of the convolution's output from its M (A*A rows of c_out floats, c_out apart, from m)
// plus bias into the calling thread's tile buffer, then its 2x2 windows whose pooled pixel lies
// in the pooling's output max-pooled into out.y and out.argmax (the pixels no window covers, the
// last row or column of an odd output, are dropped).
template <int M>
void pooled_output_tile(const ops::Conv2dGeometry& g, const PooledOutput& out, bool v4,
                        const float* m, const float* bias, int64_t t) {
  constexpr int A = F<M>::kA;
  const int64_t k = g.c_out;
  const auto [n, ty, tx] = tile_at<M>(g, t);
  float* tile = tile_buffer<M>(k);
  OutputTransform<M, false, false, float> body;
  for (int xi = 0; xi < A * A; ++xi) body.in[xi] = m + xi * k;
  for (int i = 0; i < M * M; ++i) body.out[i] = tile + i * k;
  body.bias = bias;
  channel_loop(v4, body, k);
  const ops::Pool2dGeometry& p = out.pool;
  for (int i = 0; i < M / 2 && M / 2 * ty + i < p.out_h; ++i) {
    for (int j = 0; j < M / 2 && M / 2 * tx + j < p.out_w; ++j) {
      const float* r0 = tile + (2 * i * M + 2 * j) * k;
      const int64_t o = ((n * p.out_h + M / 2 * ty + i) * p.out_w + M / 2 * tx + j) * k;
      pool_window(r0, r0 + k, r0 + M * k, r0 + (M + 1) * k, out.y + o, out.argmax + o, k);
    }
  }
}

// gradient_tile of the convolution's gradient made from a pooling's dy and argmax: the tile's
// pixels that a window covers expanded into the calling thread's tile buffer (the window's dy
// where its argmax points, +0 beside it), the others read as `zeros` (c_out zeros). False if an
// argmax named no position of its window.
template <int M>
bool pooled_gradient_tile(const ops::Conv2dGeometry& g, const PooledGradient& dy, bool v4,
                          int64_t t, const float* zeros, float* w) {
  const int64_t k = g.c_out;
  const auto [n, ty, tx] = tile_at<M>(g, t);
  float* tile = tile_buffer<M>(k);
  const float* rows[M * M];
  for (int i = 0; i < M * M; ++i) rows[i] = zeros;
  const ops::Pool2dGeometry& p = dy.pool;
  bool placed = true;
  for (int i = 0; i < M / 2 && M / 2 * ty + i < p.out_h; ++i) {
    for (int j = 0; j < M / 2 && M / 2 * tx + j < p.out_w; ++j) {
      const int64_t o = ((n * p.out_h + M / 2 * ty + i) * p.out_w + M / 2 * tx + j) * k;
      const int r = 2 * i * M + 2 * j;  // the window's first pixel in the tile
      float* d = tile + r * k;
      placed &= unpool_window(dy.dy + o, dy.argmax + o, d, d + k, d + M * k, d + (M + 1) * k, k);
      rows[r] = d;
      rows[r + 1] = d + k;
      rows[r + M] = d + M * k;
      rows[r + M + 1] = d + (M + 1) * k;
    }
  }
  gradient_rows<M>(v4, rows, k, w);
  return placed;
}

// W [tiles, A*A, c_out] of dy (nhwc) for `g`.
template <int M, typename T, typename P>
void gradient_transform(const ops::Conv2dGeometry& g, bool v4, const T* dy, P* w) {
  constexpr int A = F<M>::kA;
  const int64_t tiles = g.n * tiles_per_image(g, M), k = g.c_out;
  const T* zeros = zero_channels<T>(k);
#pragma omp parallel for schedule(static) if (conv_loop_parallel(tiles * A * A * k * 4))
  for (int64_t t = 0; t < tiles; ++t) gradient_tile<M>(g, v4, dy, t, zeros, w + t * A * A * k);
}

// The HWIO filter gradient [3, 3, c_in, c_out] of dU [A*A, c_in, c_out]; with columns
// [k0, k0 + nk) (nk >= 0), those output channels of it from dU [c_in, A*A, nk] (winograd_columns'
// layout, see filter_columns).
template <int M, typename T>
void filter_gradient_transform(const ops::Conv2dGeometry& g, bool v4, const float* du, T* dw,
                               int64_t k0 = 0, int64_t nk = -1) {
  constexpr int A = F<M>::kA;
  const int64_t c_in = g.c_in, k = g.c_out;
  const bool columns = nk >= 0;
  if (!columns) nk = k;
#pragma omp parallel for schedule(static) if (conv_loop_parallel(c_in * 9 * nk * 4))
  for (int64_t i = 0; i < c_in; ++i) {
    FilterGradientTransform<M, T> body;
    for (int xi = 0; xi < A * A; ++xi) {
      body.in[xi] = columns ? du + (i * A * A + xi) * nk : du + (xi * c_in + i) * k;
    }
    for (int tap = 0; tap < 9; ++tap) body.out[tap] = dw + (tap * c_in + i) * k + k0;
    channel_loop(v4, body, nk);
  }
}

// The batched matmuls over the tile positions. Transformed tiles (V, W, M) are tile-major,
// [tiles, A*A, c]: a tile's A*A positions lie together, so a transform writes (or reads) one
// stream per tile rather than A*A streams of c floats (the input transform of a 64-channel
// 32x32 layer wrote 36 streams at ~0.45 instructions per cycle). Each position's matrix is then
// [tiles, c] with rows A*A * c apart: oneDNN runs these as its strided GEMM (gemm:jit) instead
// of brgemm, and the whole convolution is still faster (`kernel_ab_bench`, batch 32, 64 channels
// at 32x32: forward 3.08 -> 2.86 ms, filter gradient 4.37 -> 3.59; W4 step 175 -> 159 ms,
// served ResNet-18 at batch 256 787 -> 855 rows/s, interleaved; session 24).
// Transformed filters (U, dU) stay [A*A, rows, cols].
dnnl::memory::desc tiles_desc(int64_t positions, int64_t tiles, int64_t c,
                              DType dtype = DType::kF32) {
  return dnnl::memory::desc({positions, tiles, c}, to_dnnl(dtype), {c, positions * c, 1});
}

// The same read transposed: [A*A, c, tiles].
dnnl::memory::desc tiles_transposed_desc(int64_t positions, int64_t tiles, int64_t c, DType dtype) {
  return dnnl::memory::desc({positions, c, tiles}, to_dnnl(dtype), {c, 1, positions * c});
}

// A transformed filter [A*A, rows, cols] (dense).
dnnl::memory::desc filter_desc(int64_t positions, int64_t rows, int64_t cols,
                               DType dtype = DType::kF32) {
  return dense_desc(dnnl_dims{positions, rows, cols}, dtype);
}

// The same read transposed: [A*A, rows, cols] from a dense [A*A, cols, rows].
dnnl::memory::desc filter_transposed_desc(int64_t positions, int64_t rows, int64_t cols,
                                          DType dtype) {
  return dnnl::memory::desc({positions, rows, cols}, to_dnnl(dtype), {rows * cols, 1, rows});
}

// The forward convolution fused per block of kFusedTiles tiles (winograd_fused): each thread
// transforms a block's input tiles into its own buffer, multiplies every position's [tiles, c_in]
// by U's [c_in, c_out] on small_gemm, and transforms the block's outputs, all while they are in
// its cache; only x, U and y meet memory. M's tiles as output_tile's.
// With `pooled` (f32, no residual or relu): pooled_output_tile's pooled output instead of y.
template <int M, bool Accumulate, bool Relu, typename T>
void fused_forward(const ops::Conv2dGeometry& g, bool v4, const T* x, const float* u, const T* bias,
                   T* y, const PooledOutput* pooled) {
  constexpr int64_t P = positions(M);
  const int64_t tiles = g.n * tiles_per_image(g, M), c_in = g.c_in, k = g.c_out;
  const int64_t blocks = (tiles + kFusedTiles - 1) / kFusedTiles;
  const T* zeros = zero_channels<T>(std::max(c_in, k));  // one call: a second could reallocate
  if (bias == nullptr) bias = zeros;
#pragma omp parallel if (blocks > 1 && !omp_in_parallel())
  {
    thread_local std::vector<float> vbuf, mbuf;
    vbuf.resize(static_cast<size_t>(kFusedTiles * P * c_in));
    mbuf.resize(static_cast<size_t>(kFusedTiles * P * k));
    float *v = vbuf.data(), *m = mbuf.data();
#pragma omp for schedule(static)
    for (int64_t b = 0; b < blocks; ++b) {
      const int64_t t0 = b * kFusedTiles, nt = std::min(kFusedTiles, tiles - t0);
      for (int64_t t = 0; t < nt; ++t) input_tile<M>(g, v4, x, t0 + t, zeros, v + t * P * c_in);
      for (int64_t xi = 0; xi < P; ++xi) {
        small_gemm(false, nt, k, c_in, 1.0f, v + xi * c_in, P * c_in, u + xi * c_in * k, k,
                   m + xi * k, P * k);
      }
      for (int64_t t = 0; t < nt; ++t) {
        if constexpr (std::is_same_v<T, float> && !Accumulate && !Relu) {
          if (pooled != nullptr) {
            pooled_output_tile<M>(g, *pooled, v4, m + t * P * k, bias, t0 + t);
            continue;
          }
        }
        output_tile<M, Accumulate, Relu>(g, v4, m + t * P * k, bias, y, t0 + t);
      }
    }
  }
}

template <int M, typename T>
void fused_forward(const ops::Conv2dGeometry& g, bool v4, const T* x, const float* u, const T* bias,
                   bool accumulate, bool relu, T* y, const PooledOutput* pooled) {
  TERN_CHECK(pooled == nullptr || (!accumulate && !relu),
             "Winograd: a pooled output with a residual or relu");
  if (accumulate) {
    relu ? fused_forward<M, true, true>(g, v4, x, u, bias, y, nullptr)
         : fused_forward<M, true, false>(g, v4, x, u, bias, y, nullptr);
  } else {
    relu ? fused_forward<M, false, true>(g, v4, x, u, bias, y, nullptr)
         : fused_forward<M, false, false>(g, v4, x, u, bias, y, pooled);
  }
}

// The blocks of in_block_halves' first half, of `tiles` tiles in all.
int64_t first_half_blocks(int64_t tiles) {
  return ((tiles + kFusedTiles - 1) / kFusedTiles + 1) / 2;
}

// The fused filter gradient's schedule over `tiles` tiles in blocks of kFusedTiles: the blocks in
// two fixed halves, one per thread, `block(t0, nt, sums)` adding each block's products (tiles t0
// .. t0 + nt) into its half's sums of `size` floats: the first half's du, the second's a buffer
// added to du at the end, so each element sums its tiles in the same order whatever the thread
// count. `block` returns false where an argmax named no position of its window; so does this.
template <typename Block>
bool in_block_halves(int64_t tiles, int64_t size, float* du, const Block& block) {
  const int64_t blocks = (tiles + kFusedTiles - 1) / kFusedTiles, half = first_half_blocks(tiles);
  float* partial = nullptr;  // the second half's sums
  std::atomic<bool> placed{true};
#pragma omp parallel num_threads(std::min(2, omp_get_max_threads())) if (!omp_in_parallel())
  {
    bool mine = true;
    const int threads = omp_get_num_threads(), t = omp_get_thread_num();
    thread_local std::vector<float> second;
    for (int part = t; part < 2; part += threads) {
      float* sums = du;
      if (part == 1) {
        second.resize(static_cast<size_t>(size));
        sums = partial = second.data();
      }
      std::fill(sums, sums + size, 0.0f);
      for (int64_t b = part == 0 ? 0 : half; b < (part == 0 ? half : blocks); ++b) {
        const int64_t t0 = b * kFusedTiles;
        mine &= block(t0, std::min(kFusedTiles, tiles - t0), sums);
      }
    }
    if (!mine) placed = false;
#pragma omp barrier
    const int64_t first = size * t / threads, last = size * (t + 1) / threads;
#pragma omp simd
    for (int64_t i = first; i < last; ++i) du[i] += partial[i];
  }
  return placed;
}

// Whether in_block_halves' halves over `g`'s F(M x M, 3x3) tiles fall between images.
template <int M>
bool halves_between_images(const ops::Conv2dGeometry& g) {
  const int64_t tpi = tiles_per_image(g, M), tiles = g.n * tpi;
  return std::min(first_half_blocks(tiles) * kFusedTiles, tiles) % tpi == 0;
}

// The thread's buffers for a block of kFusedTiles transformed tiles of c floats per position.
float* block_tiles(std::vector<float>& buffer, int m, int64_t c) {
  buffer.resize(static_cast<size_t>(kFusedTiles * positions(m) * c));
  return buffer.data();
}

// dU [A*A, c_in, c_out] = the sum over all tiles of V^T W, fused per block of kFusedTiles tiles
// (winograd_fused): a block's input and gradient tiles transformed into the thread's buffers,
// then each position's [c_in, tiles] x [tiles, c_out] added to a dU on small_gemm_acc; the blocks
// in in_block_halves' fixed halves. With `pooled`: dy expanded from a pooling's
// (pooled_gradient_tile); false if an argmax named no position of its window.
template <int M, typename T>
bool fused_filter_gradient(const ops::Conv2dGeometry& g, bool v4, const T* x, const T* dy,
                           float* du, const PooledGradient* pooled = nullptr) {
  constexpr int64_t P = positions(M);
  const int64_t c_in = g.c_in, k = g.c_out;
  const T* zeros = zero_channels<T>(std::max(c_in, k));
  return in_block_halves(
      g.n * tiles_per_image(g, M), P * c_in * k, du, [&](int64_t t0, int64_t nt, float* sums) {
        thread_local std::vector<float> vbuf, wbuf;
        float *v = block_tiles(vbuf, M, c_in), *w = block_tiles(wbuf, M, k);
        bool placed = true;
        for (int64_t i = 0; i < nt; ++i) {
          input_tile<M>(g, v4, x, t0 + i, zeros, v + i * P * c_in);
          if (pooled != nullptr) {
            placed &= pooled_gradient_tile<M>(g, *pooled, v4, t0 + i,
                                              reinterpret_cast<const float*>(zeros), w + i * P * k);
          } else {
            gradient_tile<M>(g, v4, dy, t0 + i, zeros, w + i * P * k);
          }
        }
        for (int64_t xi = 0; xi < P; ++xi) {
          small_gemm_acc(true, c_in, k, nt, v + xi * c_in, P * c_in, w + xi * k, P * k,
                         sums + xi * c_in * k, k);
        }
        return placed;
      });
}

// Tile t's input gradient, B dV B^T from its dV (A*A rows of c_in floats, c_in apart, from dv),
// into dx (nhwc) for `g`: stored into its pixels that no earlier tile of the image wrote (the
// tiles before it in its row overlap its first two columns, those of the row above its first two
// rows), added to the others; pixels outside the image to a scratch row. `zeros`: c_in zeros.
// With channels [c0, c0 + nc) (nc >= 0): those channels of the pixels, from dV's A*A rows of nc
// floats.
template <int M>
void input_gradient_tile(const ops::Conv2dGeometry& g, bool v4, const float* dv, const float* zeros,
                         float* dx, int64_t t, int64_t c0 = 0, int64_t nc = -1) {
  constexpr int A = F<M>::kA;
  const int64_t c = g.c_in;
  if (nc < 0) nc = c;
  const auto [n, ty, tx] = tile_at<M>(g, t);
  InputGradientTransform<M> body;
  for (int i = 0; i < A; ++i) {
    const int64_t ih = M * ty - g.pad_top + i;
    for (int j = 0; j < A; ++j) {
      const int64_t iw = M * tx - g.pad_left + j;
      const bool inside = ih >= 0 && ih < g.h && iw >= 0 && iw < g.w;
      const bool written = (ty > 0 && i < A - M) || (tx > 0 && j < A - M);
      float* pixel = inside ? dx + ((n * g.h + ih) * g.w + iw) * c + c0 : nullptr;
      body.in[i * A + j] = dv + (i * A + j) * nc;
      body.out[i * A + j] = inside ? pixel : scratch_channels<float>(c);
      body.add[i * A + j] = inside && written ? pixel : zeros;
    }
  }
  channel_loop(v4, body, nc);
}

// The input gradient dx (nhwc) of the forward convolution `g`, the adjoint of its F(M x M, 3x3)
// tiles fused per block of kFusedTiles tiles: a block's dy tiles to W = A dy A^T in the thread's
// buffer, each position's [tiles, c_out] times ut's [c_out, c_in] (U transposed) on small_gemm,
// then each tile's B dV B^T into the pixels it reads (input_gradient_tile). Each thread takes
// whole images and their tiles in order, so a pixel that two tiles read is summed by one thread,
// in tile order: the result does not depend on the thread count.
// With `pooled`: dy expanded from a pooling's (pooled_gradient_tile); false if an argmax named no
// position of its window.
template <int M>
bool fused_input_gradient(const ops::Conv2dGeometry& g, bool v4, const float* dy, const float* ut,
                          float* dx, const PooledGradient* pooled = nullptr) {
  constexpr int64_t P = positions(M);
  const int64_t tpi = tiles_per_image(g, M), c_in = g.c_in, k = g.c_out;
  const float* zeros = zero_channels<float>(std::max(c_in, k));
  std::atomic<bool> placed{true};
#pragma omp parallel if (g.n > 1 && !omp_in_parallel())
  {
    bool mine = true;
    thread_local std::vector<float> wbuf, vbuf;
    wbuf.resize(static_cast<size_t>(kFusedTiles * P * k));
    vbuf.resize(static_cast<size_t>(kFusedTiles * P * c_in));
    float *w = wbuf.data(), *dv = vbuf.data();
    const int threads = omp_get_num_threads(), th = omp_get_thread_num();
    const int64_t last = g.n * (th + 1) / threads * tpi;
    for (int64_t t0 = g.n * th / threads * tpi; t0 < last; t0 += kFusedTiles) {
      const int64_t nt = std::min(kFusedTiles, last - t0);
      for (int64_t t = 0; t < nt; ++t) {
        if (pooled != nullptr) {
          mine &= pooled_gradient_tile<M>(g, *pooled, v4, t0 + t, zeros, w + t * P * k);
        } else {
          gradient_tile<M>(g, v4, dy, t0 + t, zeros, w + t * P * k);
        }
      }
      for (int64_t xi = 0; xi < P; ++xi) {
        small_gemm(false, nt, c_in, k, 1.0f, w + xi * k, P * k, ut + xi * k * c_in, c_in,
                   dv + xi * c_in, P * c_in);
      }
      for (int64_t t = 0; t < nt; ++t) {
        input_gradient_tile<M>(g, v4, dv + t * P * c_in, zeros, dx, t0 + t);
      }
    }
    if (!mine) placed = false;
  }
  return placed;
}

// Both gradients of the forward convolution `g` under a pooling (conv2d_backprop_pooled): per
// block of kFusedTiles tiles, each dy tile expanded from the pooling's and transformed once, W =
// A dy A^T, for the two products that read it: the filter gradient's dU += V^T W (as
// fused_filter_gradient) and the input gradient's dV = W U^T, B dV B^T into dx (as
// fused_input_gradient). in_block_halves' two halves must fall between images
// (halves_between_images), so each thread also owns whole images of dx: both results are bit for
// bit the two fused kernels', whatever the thread count. ut: the transformed filter, transposed
// ([A*A, c_out, c_in]); du: [A*A, c_in, c_out]. False if an argmax named no position of its
// window.
template <int M>
bool fused_pooled_gradients(const ops::Conv2dGeometry& g, bool v4, const float* x,
                            const PooledGradient& pooled, const float* ut, float* dx, float* du) {
  constexpr int64_t P = positions(M);
  const int64_t c_in = g.c_in, k = g.c_out;
  const float* zeros = zero_channels<float>(std::max(c_in, k));
  return in_block_halves(
      g.n * tiles_per_image(g, M), P * c_in * k, du, [&](int64_t t0, int64_t nt, float* sums) {
        thread_local std::vector<float> vbuf, wbuf, dvbuf;
        float *v = block_tiles(vbuf, M, c_in), *w = block_tiles(wbuf, M, k),
              *dv = block_tiles(dvbuf, M, c_in);
        bool placed = true;
        for (int64_t i = 0; i < nt; ++i) {
          input_tile<M>(g, v4, x, t0 + i, zeros, v + i * P * c_in);
          placed &= pooled_gradient_tile<M>(g, pooled, v4, t0 + i, zeros, w + i * P * k);
        }
        // Each position's W read by both products while it is in L1 (all the filter gradient's
        // products first, then the input gradient's: W3's layer 0.05-0.07 ms ahead of the two
        // kernels instead of 0.1-0.15).
        for (int64_t xi = 0; xi < P; ++xi) {
          small_gemm_acc(true, c_in, k, nt, v + xi * c_in, P * c_in, w + xi * k, P * k,
                         sums + xi * c_in * k, k);
          small_gemm(false, nt, c_in, k, 1.0f, w + xi * k, P * k, ut + xi * k * c_in, c_in,
                     dv + xi * c_in, P * c_in);
        }
        for (int64_t i = 0; i < nt; ++i) {
          input_gradient_tile<M>(g, v4, dv + i * P * c_in, zeros, dx, t0 + i);
        }
        return placed;
      });
}

// The calling thread's buffer for a block's transformed filter (or filter gradient) in the
// forms per block of channels below: one for the three directions, at least n floats (grown,
// never shrunk; 4.7 MB for ResNet-18's 512-channel layers).
float* block_filter_buffer(int64_t n) {
  thread_local std::vector<float> buffer;
  if (static_cast<int64_t>(buffer.size()) < n) buffer.resize(static_cast<size_t>(n));
  return buffer.data();
}

// The forward convolution F(4x4, 3x3) per block of kColumnBlock output channels
// (winograd_columns): V [tiles, A*A, c_in] of every tile into `v` first, then each thread takes
// whole blocks of output channels: the filter's transform for the block's columns into its own
// buffer ([c_in, A*A, nc]: it stays in the thread's cache, where the whole transform would cross
// memory twice), each position's [tiles, c_in] x [c_in, nc] on small_gemm, and those channels of
// every output tile. `flipped`: filter is the HWIO [3, 3, g.c_out, g.c_in] of an input gradient
// (WinogradForward's flipped form), its taps reversed and each position transposed.
template <bool Accumulate, bool Relu>
void columns_forward(const ops::Conv2dGeometry& g, bool v4, bool flipped, const float* x,
                     const float* filter, const float* bias, float* v, float* y) {
  constexpr int64_t P = positions(4);
  const int64_t tiles = g.n * tiles_per_image(g, 4), c_in = g.c_in, k = g.c_out;
  const int64_t blocks = (k + kColumnBlock - 1) / kColumnBlock;
  input_transform<4>(g, v4, x, v);
  if (bias == nullptr) bias = zero_channels<float>(k);
#pragma omp parallel if (blocks > 1 && !omp_in_parallel())
  {
    thread_local std::vector<float> mbuf;
    mbuf.resize(static_cast<size_t>(tiles * P * kColumnBlock));
    float *u = block_filter_buffer(P * c_in * kColumnBlock), *m = mbuf.data();
#pragma omp for schedule(static)
    for (int64_t b = 0; b < blocks; ++b) {
      const int64_t k0 = b * kColumnBlock, nk = std::min(kColumnBlock, k - k0);
      if (flipped) {
        transposed_filter_transform<4>(k, c_in, v4, filter, u, /*flip=*/true, k0, nk);
      } else {
        filter_columns<4>(c_in, k, v4, filter, k0, nk, u);
      }
      for (int64_t xi = 0; xi < P; ++xi) {
        small_gemm(false, tiles, nk, c_in, 1.0f, v + xi * c_in, P * c_in, u + xi * nk, P * nk,
                   m + xi * nk, P * nk);
      }
      for (int64_t t = 0; t < tiles; ++t) {
        output_tile<4, Accumulate, Relu>(g, v4, m + t * P * nk, bias, y, t, k0, nk);
      }
    }
  }
}

void columns_forward(const ops::Conv2dGeometry& g, bool v4, bool flipped, const float* x,
                     const float* filter, const float* bias, bool accumulate, bool relu, float* v,
                     float* y) {
  if (accumulate) {
    relu ? columns_forward<true, true>(g, v4, flipped, x, filter, bias, v, y)
         : columns_forward<true, false>(g, v4, flipped, x, filter, bias, v, y);
  } else {
    relu ? columns_forward<false, true>(g, v4, flipped, x, filter, bias, v, y)
         : columns_forward<false, false>(g, v4, flipped, x, filter, bias, v, y);
  }
}

// The filter gradient F(4x4, 3x3) per block of kColumnBlock output channels (winograd_columns):
// V and W of every tile into `v` and `w` first, then each thread takes whole blocks of output
// channels: each position's dU [c_in, nc] = V^T [c_in, tiles] x W [tiles, nc] on small_gemm
// into its own buffer, and G^T dU G into those columns of dw. Each column sums its tiles in one
// product, in tile order, whatever the thread count.
template <typename Out>
void columns_filter_gradient(const ops::Conv2dGeometry& g, bool v4, const float* x, const float* dy,
                             float* v, float* w, Out* dw) {
  constexpr int64_t P = positions(4);
  const int64_t tiles = g.n * tiles_per_image(g, 4), c_in = g.c_in, k = g.c_out;
  const int64_t blocks = (k + kColumnBlock - 1) / kColumnBlock;
  input_transform<4>(g, v4, x, v);
  gradient_transform<4>(g, v4, dy, w);
#pragma omp parallel if (blocks > 1 && !omp_in_parallel())
  {
    float* du = block_filter_buffer(P * c_in * kColumnBlock);
#pragma omp for schedule(static)
    for (int64_t b = 0; b < blocks; ++b) {
      const int64_t k0 = b * kColumnBlock, nk = std::min(kColumnBlock, k - k0);
      for (int64_t xi = 0; xi < P; ++xi) {
        small_gemm(true, c_in, nk, tiles, 1.0f, v + xi * c_in, P * c_in, w + xi * k + k0, P * k,
                   du + xi * nk, P * nk);
      }
      filter_gradient_transform<4>(g, v4, du, dw, k0, nk);
    }
  }
}

// The input gradient dx (nhwc) of the forward convolution `g` as the adjoint of its F(4x4, 3x3)
// tiles per block of kColumnBlock input channels (winograd_columns): W = A dy A^T of every tile,
// each position's transposed into wt [A*A, c_out, tiles], then each thread takes whole blocks of
// input channels: the filter's transform for the block's rows ([nc, A*A, c_out], the rows of
// the HWIO filter read whole) into its own buffer, each position's dV^T [nc, tiles] = U
// [nc, c_out] x W^T [c_out, tiles] on small_gemm, dV^T transposed back per position, and each
// tile's B dV B^T into those channels of the pixels it reads (input_gradient_tile, tiles in
// order: the result does not depend on the thread count). The flipped filter's forward
// (WinogradForward) would transpose the whole transformed filter (36 x c_in x c_out) where this
// transposes W and dV (36 x tiles x channels); ResNet-18's 512-channel layer at 4x4, batch 32:
// 2.4-2.5 -> 1.8 ms per node (`kernel_ab_bench`, 4 independent nodes). The block's transformed
// rows hold each position's c_out floats kPositionPad floats apart from the next: at 2 KB apart
// (512 channels) the 36 positions a row's transform writes fall in two L1 sets, 18 lines each
// where L1 keeps 12 per set, and the node took 2.7 ms, its filter transform a third of it.
constexpr int64_t kPositionPad = 16;
void columns_input_gradient(const ops::Conv2dGeometry& g, bool v4, const float* dy,
                            const float* filter, float* w, float* wt, float* dx) {
  constexpr int64_t P = positions(4);
  const int64_t tiles = g.n * tiles_per_image(g, 4), c_in = g.c_in, k = g.c_out;
  const int64_t blocks = (c_in + kColumnBlock - 1) / kColumnBlock;
  gradient_transform<4>(g, v4, dy, w);
#pragma omp parallel for schedule(static) if (conv_loop_parallel(P * tiles * k * 4))
  for (int64_t xi = 0; xi < P; ++xi) {
    transpose_f32(tiles, k, w + xi * k, P * k, wt + xi * k * tiles, tiles);
  }
  const float* zeros = zero_channels<float>(c_in);
#pragma omp parallel if (blocks > 1 && !omp_in_parallel())
  {
    thread_local std::vector<float> dvtbuf, dvbuf;
    const int64_t ld = k + kPositionPad;
    dvtbuf.resize(static_cast<size_t>(P * kColumnBlock * tiles));
    dvbuf.resize(static_cast<size_t>(tiles * P * kColumnBlock));
    float *u = block_filter_buffer(kColumnBlock * P * ld), *dvt = dvtbuf.data(), *dv = dvbuf.data();
#pragma omp for schedule(static)
    for (int64_t b = 0; b < blocks; ++b) {
      const int64_t c0 = b * kColumnBlock, nc = std::min(kColumnBlock, c_in - c0);
      filter_columns<4>(c_in, k, v4, filter, 0, k, u, c0, c0 + nc, ld);
      for (int64_t xi = 0; xi < P; ++xi) {
        small_gemm(false, nc, tiles, k, 1.0f, u + xi * ld, P * ld, wt + xi * k * tiles, tiles,
                   dvt + xi * nc * tiles, tiles);
        transpose_f32(nc, tiles, dvt + xi * nc * tiles, tiles, dv + xi * nc, P * nc);
      }
      for (int64_t t = 0; t < tiles; ++t) {
        input_gradient_tile<4>(g, v4, dv + t * P * nc, zeros, dx, t, c0, nc);
      }
    }
  }
}

}  // namespace

// --- WinogradForward ---

WinogradForward::WinogradForward(const ops::Conv2dGeometry& g, int m, bool flipped,
                                 const Epilogue& ep, DType dtype, bool kept_filter)
    : g_(g),
      m_(m),
      dtype_(dtype),
      flipped_(flipped),
      residual_(ep.residual_input >= 0),
      relu_(ep.activation == ops::Activation::kRelu),
      v4_(cpu_runs_v4_variants()) {
  TERN_CHECK(m == 2 || m == 4, "Winograd: output tiles of 2x2 or 4x4, not ", m);
  TERN_CHECK(dtype == DType::kF32 || dtype == DType::kBF16, "Winograd: f32 or bf16 tensors, not ",
             dtype_name(dtype));
  TERN_CHECK(ep.activation == ops::Activation::kNone || relu_,
             "Winograd: an activation other than relu");
  fused_ = v4_ && winograd_fused(g, m);
  if (fused_) return;
  // Per block of output channels where it applies, unless the filter is kept (then the chunks
  // below, whose transform of it is made once).
  columns_ = !kept_filter && v4_ && m == 4 && dtype == DType::kF32 && winograd_columns(g);
  if (columns_) return;
  chunk_ = winograd_chunk_images(g, m);
  const DType products = winograd_products(m, dtype);
  // Per chunk of images: M (tiles x c_out) = V (tiles x c_in) U (for the flipped filter, whose
  // HWIO form is [3, 3, c_out, c_in], U is written transposed: [A*A, c_in, c_out] as well).
  // The full chunk's GEMM, then the last, shorter chunk's (if any).
  for (int64_t n : {chunk_, g.n % chunk_}) {
    if (n == 0) continue;
    const int64_t p = positions(m), tiles = n * tiles_per_image(g, m);
    gemms_.emplace_back();
    const dnnl::memory::desc u = flipped && products == DType::kBF16
                                     ? filter_transposed_desc(p, g.c_in, g.c_out, products)
                                     : filter_desc(p, g.c_in, g.c_out, products);
    init_matmul(gemms_.back(), tiles_desc(p, tiles, g.c_in, products), u,
                tiles_desc(p, tiles, g.c_out), false);
  }
}

void WinogradForward::run(const void* x, const void* filter, bool constant_filter, const void* bias,
                          void* out) {
  // The third type is the products' (winograd_products, which the GEMMs were built with).
  if (dtype_ == DType::kBF16) {
    if (m_ == 4) return run_tiles<4, bfloat16, float>(x, filter, constant_filter, bias, out);
    return run_tiles<2, bfloat16, bfloat16>(x, filter, constant_filter, bias, out);
  }
  if (m_ == 4) return run_tiles<4, float, float>(x, filter, constant_filter, bias, out);
  run_tiles<2, float, float>(x, filter, constant_filter, bias, out);
}

void WinogradForward::run_pooled(const void* x, const void* filter, const void* bias,
                                 const PooledOutput& out) {
  TERN_CHECK(pools_tiles() && m_ == 4, "Winograd: a pooled output needs the fused f32 form");
  run_tiles<4, float, float>(x, filter, false, bias, nullptr, &out);
}

template <int M, typename T, typename P>
void WinogradForward::run_tiles(const void* x, const void* filter, bool constant_filter,
                                const void* bias, void* out, const PooledOutput* pooled) {
  const ops::Conv2dGeometry& g = g_;
  if constexpr (M == 4 && std::is_same_v<T, float>) {
    if (columns_) {
      auto* v = static_cast<float*>(layout_slot(
          kPatchesSlot,
          static_cast<size_t>(positions(4) * g.n * tiles_per_image(g, 4) * g.c_in) * 4));
      columns_forward(g, v4_, flipped_, static_cast<const float*>(x),
                      static_cast<const float*>(filter), static_cast<const float*>(bias), residual_,
                      relu_, v, static_cast<float*>(out));
      return;
    }
  }
  const size_t u_bytes = static_cast<size_t>(positions(M) * g.c_in * g.c_out) * sizeof(P);
  // The filter's transform: every run, or once for a constant filter (again if it moves).
  P* u = nullptr;
  if (constant_filter) {
    if (kept_.size() == 0) kept_ = AlignedBuffer(u_bytes);
    u = static_cast<P*>(kept_.data());
  } else {
    u = static_cast<P*>(layout_slot(0, u_bytes));
  }
  if (!constant_filter || kept_from_ != filter) {
    const auto* f = static_cast<const T*>(filter);
    if (flipped_) {
      if constexpr (std::is_same_v<P, float>) {
        transposed_filter_transform<M>(g.c_out, g.c_in, v4_, f, u, /*flip=*/true);
      } else {  // [A*A, g.c_out, g.c_in], which the GEMM reads transposed
        filter_transform<M>(g.c_out, g.c_in, v4_, f, u, true);
      }
    } else {
      filter_transform<M>(g.c_in, g.c_out, v4_, f, u);
    }
    kept_from_ = constant_filter ? filter : nullptr;
  }
  const auto* in = static_cast<const T*>(x);
  auto* y = static_cast<T*>(out);
  if constexpr (std::is_same_v<P, float>) {
    if (fused_) {
      fused_forward<M>(g, v4_, in, u, static_cast<const T*>(bias), residual_, relu_, y, pooled);
      return;
    }
  }
  for (int64_t first = 0; first < g.n; first += chunk_) {
    ops::Conv2dGeometry part = g;
    part.n = std::min(chunk_, g.n - first);
    PrimitiveRunner& gemm = part.n == chunk_ ? gemms_[0] : gemms_[1];
    const int64_t tiles = part.n * tiles_per_image(g, M);
    auto* v = static_cast<P*>(
        layout_slot(kPatchesSlot, static_cast<size_t>(positions(M) * tiles * g.c_in) * sizeof(P)));
    input_transform<M>(part, v4_, in + first * g.h * g.w * g.c_in, v);
    auto* m = static_cast<float*>(layout_slot(
        kGemmResultSlot, static_cast<size_t>(positions(M) * tiles * g.c_out) * sizeof(float)));
    gemm.set(DNNL_ARG_SRC, v);
    gemm.set(DNNL_ARG_WEIGHTS, u);
    gemm.set(DNNL_ARG_DST, m);
    gemm.execute();
    output_transform<M>(part, v4_, m, static_cast<const T*>(bias), residual_, relu_,
                        y + first * g.out_h * g.out_w * g.c_out);
  }
}

// --- WinogradFilterGradient ---

WinogradFilterGradient::WinogradFilterGradient(const ops::Conv2dGeometry& g, int m, DType dtype,
                                               DType dw_dtype)
    : g_(g), m_(m), dtype_(dtype), dw_dtype_(dw_dtype), v4_(cpu_runs_v4_variants()) {
  TERN_CHECK(m == 2 || m == 4, "Winograd: output tiles of 2x2 or 4x4, not ", m);
  TERN_CHECK((dtype == DType::kF32 && dw_dtype == DType::kF32) ||
                 (dtype == DType::kBF16 && (dw_dtype == DType::kF32 || dw_dtype == DType::kBF16)),
             "Winograd filter gradient: f32, or bf16 with an f32 or bf16 result, not ",
             dtype_name(dtype), " -> ", dtype_name(dw_dtype));
  fused_ = v4_ && winograd_fused(g, m);
  if (fused_) return;
  columns_ = v4_ && m == 4 && dtype == DType::kF32 && winograd_columns(g);
  if (columns_) return;
  chunk_ = winograd_chunk_images(g, m);
  // Per chunk of images: dU (c_in x c_out) = V^T (V: tiles x c_in, read transposed) W (tiles x
  // c_out), the chunks after the first added to dU: the first chunk's GEMM, the full chunks'
  // after it, the last, shorter chunk's (the last two only where there are such chunks).
  const int64_t tpi = tiles_per_image(g, m), rest = g.n % chunk_;
  gemms_.resize(3);
  const int64_t p = positions(m);
  const dnnl::memory::desc du = filter_desc(p, g.c_in, g.c_out);
  const DType products = winograd_products(m, dtype);
  auto init = [&](PrimitiveRunner& gemm, int64_t images, bool accumulate) {
    const int64_t tiles = images * tpi;
    init_matmul(gemm, tiles_transposed_desc(p, tiles, g.c_in, products),
                tiles_desc(p, tiles, g.c_out, products), du, accumulate);
  };
  init(gemms_[0], chunk_, false);
  if (g.n > chunk_) init(gemms_[1], chunk_, true);
  if (rest > 0 && g.n > chunk_) init(gemms_[2], rest, true);
}

void WinogradFilterGradient::run(const void* x, const void* dy, void* dw) {
  const bool bf16_in = dtype_ == DType::kBF16, bf16_out = dw_dtype_ == DType::kBF16;
  // The third type is the products' (winograd_products, which the GEMMs were built with).
  if (m_ == 4) {
    if (!bf16_in) return run_tiles<4, float, float, float>(x, dy, dw);
    if (!bf16_out) return run_tiles<4, bfloat16, float, float>(x, dy, dw);
    return run_tiles<4, bfloat16, float, bfloat16>(x, dy, dw);
  }
  if (!bf16_in) return run_tiles<2, float, float, float>(x, dy, dw);
  if (!bf16_out) return run_tiles<2, bfloat16, bfloat16, float>(x, dy, dw);
  run_tiles<2, bfloat16, bfloat16, bfloat16>(x, dy, dw);
}

bool WinogradFilterGradient::run_pooled(const void* x, const PooledGradient& dy, void* dw) {
  TERN_CHECK(reads_pooled() && m_ == 4, "Winograd: a pooled gradient needs the fused f32 form");
  const ops::Conv2dGeometry& g = g_;
  auto* du = static_cast<float*>(layout_slot(
      kGemmResultSlot, static_cast<size_t>(positions(4) * g.c_in * g.c_out) * sizeof(float)));
  const bool placed =
      fused_filter_gradient<4, float>(g, v4_, static_cast<const float*>(x), nullptr, du, &dy);
  filter_gradient_transform<4>(g, v4_, du, static_cast<float*>(dw));
  return placed;
}

template <int M, typename T, typename P, typename Out>
void WinogradFilterGradient::run_tiles(const void* x, const void* dy, void* dw) {
  const ops::Conv2dGeometry& g = g_;
  const int64_t p = positions(M);
  const auto* in = static_cast<const T*>(x);
  const auto* grad = static_cast<const T*>(dy);
  if constexpr (M == 4 && std::is_same_v<T, float>) {
    if (columns_) {
      const int64_t tiles = g.n * tiles_per_image(g, 4);
      auto* v = static_cast<float*>(
          layout_slot(kPatchesSlot, static_cast<size_t>(p * tiles * g.c_in) * sizeof(float)));
      auto* w = static_cast<float*>(
          layout_slot(0, static_cast<size_t>(p * tiles * g.c_out) * sizeof(float)));
      columns_filter_gradient(g, v4_, in, grad, v, w, static_cast<Out*>(dw));
      return;
    }
  }
  auto* du = static_cast<float*>(
      layout_slot(kGemmResultSlot, static_cast<size_t>(p * g.c_in * g.c_out) * sizeof(float)));
  if constexpr (std::is_same_v<P, float>) {
    if (fused_) {
      fused_filter_gradient<M>(g, v4_, in, grad, du);
      filter_gradient_transform<M>(g, v4_, du, static_cast<Out*>(dw));
      return;
    }
  }
  for (int64_t first = 0; first < g.n; first += chunk_) {
    ops::Conv2dGeometry part = g;
    part.n = std::min(chunk_, g.n - first);
    const int64_t tiles = part.n * tiles_per_image(g, M);
    auto* v = static_cast<P*>(
        layout_slot(kPatchesSlot, static_cast<size_t>(p * tiles * g.c_in) * sizeof(P)));
    input_transform<M>(part, v4_, in + first * g.h * g.w * g.c_in, v);
    auto* w = static_cast<P*>(layout_slot(0, static_cast<size_t>(p * tiles * g.c_out) * sizeof(P)));
    gradient_transform<M>(part, v4_, grad + first * g.out_h * g.out_w * g.c_out, w);
    PrimitiveRunner& gemm = first == 0 ? gemms_[0] : part.n == chunk_ ? gemms_[1] : gemms_[2];
    gemm.set(DNNL_ARG_SRC, v);
    gemm.set(DNNL_ARG_WEIGHTS, w);
    gemm.set(DNNL_ARG_DST, du);
    gemm.execute();
  }
  filter_gradient_transform<M>(g, v4_, du, static_cast<Out*>(dw));
}

// The adjoint input gradient's filter: U transposed per position ([A*A, c_out, c_in]) of `g`'s
// HWIO filter, in the first layout slot (WinogradInputGradient, WinogradPooledGradients).
namespace {
const float* adjoint_filter(const ops::Conv2dGeometry& g, bool v4, const void* filter) {
  auto* ut = static_cast<float*>(
      layout_slot(0, static_cast<size_t>(positions(4) * g.c_in * g.c_out) * sizeof(float)));
  transposed_filter_transform<4>(g.c_in, g.c_out, v4, static_cast<const float*>(filter), ut,
                                 /*flip=*/false);
  return ut;
}
}  // namespace

// --- WinogradPooledGradients ---

bool pooled_gradients_split(const ops::Conv2dGeometry& g) {
  return halves_between_images<4>(g);
}

WinogradPooledGradients::WinogradPooledGradients(const ops::Conv2dGeometry& g)
    : g_(g), v4_(cpu_runs_v4_variants()) {
  TERN_CHECK(pooled_gradients_split(g), "Winograd pooled gradients: halves of blocks split images");
}

bool WinogradPooledGradients::run(const void* x, const PooledGradient& dy, const void* filter,
                                  void* dx, void* dw) {
  const ops::Conv2dGeometry& g = g_;
  const float* ut = adjoint_filter(g, v4_, filter);
  auto* du = static_cast<float*>(layout_slot(
      kGemmResultSlot, static_cast<size_t>(positions(4) * g.c_in * g.c_out) * sizeof(float)));
  const bool placed = fused_pooled_gradients<4>(g, v4_, static_cast<const float*>(x), dy, ut,
                                                static_cast<float*>(dx), du);
  filter_gradient_transform<4>(g, v4_, du, static_cast<float*>(dw));
  return placed;
}

// --- WinogradInputGradient ---

WinogradInputGradient::WinogradInputGradient(const ops::Conv2dGeometry& g)
    : g_(g), v4_(cpu_runs_v4_variants()), columns_(v4_ && winograd_columns(g)) {
  TERN_CHECK(g.kh == 3 && g.kw == 3 && g.stride_h == 1 && g.stride_w == 1 && g.dil_h == 1 &&
                 g.dil_w == 1 && g.groups == 1,
             "Winograd input gradient: a 3x3 ungrouped convolution at stride 1 without dilation");
}

void WinogradInputGradient::run(const void* dy, const void* filter, void* dx) {
  const ops::Conv2dGeometry& g = g_;
  if (columns_) {
    const size_t bytes =
        static_cast<size_t>(positions(4) * g.n * tiles_per_image(g, 4) * g.c_out) * sizeof(float);
    columns_input_gradient(g, v4_, static_cast<const float*>(dy), static_cast<const float*>(filter),
                           static_cast<float*>(layout_slot(kPatchesSlot, bytes)),
                           static_cast<float*>(layout_slot(0, bytes)), static_cast<float*>(dx));
    return;
  }
  fused_input_gradient<4>(g, v4_, static_cast<const float*>(dy), adjoint_filter(g_, v4_, filter),
                          static_cast<float*>(dx));
}

bool WinogradInputGradient::run_pooled(const PooledGradient& dy, const void* filter, void* dx) {
  TERN_CHECK(reads_pooled(), "Winograd: a pooled gradient needs the fused form");
  return fused_input_gradient<4>(g_, v4_, nullptr, adjoint_filter(g_, v4_, filter),
                                 static_cast<float*>(dx), &dy);
}

}  // namespace tern::cpu::onednn

TERN_CPU_V3_END
