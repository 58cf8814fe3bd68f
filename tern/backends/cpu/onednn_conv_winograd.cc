// Winograd F(2x2, 3x3) convolutions (declared in onednn_conv.h): tern's tile transforms around
// 16 batched GEMMs on oneDNN's matmul, for the 3x3 stride-1 layers oneDNN 2.6 runs without its
// own Winograd (images too small for its F(4x4, 3x3) tiles or scratchpad limit). Notation of
// Lavin and Gray, "Fast Algorithms for Convolutional Neural Networks" (2016): a 2x2 output tile
// is A^T [(G g G^T) . (B^T d B)] A for the 4x4 input tile d and the 3x3 filter g, with
//   B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1], G = [1 0 0; .5 .5 .5; .5 -.5 .5; 0 0 1],
//   A^T = [1 1 1 0; 0 1 -1 -1].
// Each of the 16 positions xi of the transformed tile is one GEMM over the channels:
//   forward          M[xi] (tiles x c_out) = V[xi] (tiles x c_in) U[xi] (c_in x c_out),
//   filter gradient  dU[xi] (c_in x c_out) = V[xi]^T W[xi] (tiles x c_out), W = A dy A^T,
//                    then dg = G^T dU G;
// the input gradient is the forward convolution of dy with the filter flipped in H and W (O and
// I swapped), whose transform is U with rows and columns 0 and 3 of the tile swapped (G of the
// reversed filter is G with rows 0 and 3 exchanged) and each [c_in, c_out] block transposed: the
// GEMMs read U transposed, and the tile positions are permuted in V and M instead of U.
// Every transform is a loop over channels (NHWC keeps them contiguous), built for x86-64-v3 and
// for AVX-512; the code below runs only where cpu_isa() is x86-64-v3 (winograd_f2_applies).
#include <omp.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <string_view>
#include <vector>

#include "tern/backends/cpu/cpu_isa.h"
#include "tern/backends/cpu/onednn_conv.h"

namespace tern::cpu::onednn {
namespace {

constexpr int kTile = 16;  // positions of a 4x4 transformed tile

int64_t tiles_h(const ops::Conv2dGeometry& g) {
  return (g.out_h + 1) / 2;
}
int64_t tiles_w(const ops::Conv2dGeometry& g) {
  return (g.out_w + 1) / 2;
}

}  // namespace

// Baseline code (called before anything checks the CPU); the rest of the file is x86-64-v3.
int64_t winograd_f2_chunk_images(const ops::Conv2dGeometry& g) {
  const int64_t image_bytes = kTile * tiles_h(g) * tiles_w(g) * std::max(g.c_in, g.c_out) * 4;
  return std::clamp<int64_t>(kWinogradF2ChunkBytes / image_bytes, 1, g.n);
}

bool winograd_f2_applies(const ops::Conv2dGeometry& g, DType dtype, bool whole_batch) {
  static const bool enabled = [] {
    const char* v = std::getenv("TERN_CONV_WINOGRAD_F2");
    return v == nullptr || std::string_view(v) != "0";
  }();
  if (!enabled || dtype != DType::kF32 || cpu_isa() < CpuIsa::kX86_64_v3) return false;
  if (g.kh != 3 || g.kw != 3 || g.stride_h != 1 || g.stride_w != 1 || g.dil_h != 1 ||
      g.dil_w != 1 || g.groups != 1 || g.c_in < kWinogradF2MinChannels ||
      g.c_out < kWinogradF2MinChannels) {
    return false;
  }
  // The transformed tiles of the batch (or of one chunk of images) and the transformed filter.
  const int64_t images = whole_batch ? g.n : winograd_f2_chunk_images(g);
  const int64_t tiles = images * tiles_h(g) * tiles_w(g);
  const int64_t largest = kTile * 4 * std::max({tiles * g.c_in, tiles * g.c_out, g.c_in * g.c_out});
  return g.n * tiles_h(g) * tiles_w(g) >= kWinogradF2MinTiles && largest <= kWinogradF2MaxBytes;
}

}  // namespace tern::cpu::onednn

TERN_CPU_V3_BEGIN  // the code below is x86-64-v3 (cpu_isa.h)

namespace tern::cpu::onednn {
namespace {

// The GEMM slot of tile position xi = 4 i + j: itself, or with rows and columns 0 and 3
// exchanged (the flipped filter of an input gradient).
std::array<int, kTile> tile_slots(bool flipped) {
  std::array<int, kTile> slot{};
  auto swap03 = [](int i) { return i == 0 ? 3 : i == 3 ? 0 : i; };
  for (int i = 0; i < 4; ++i) {
    for (int j = 0; j < 4; ++j) slot[i * 4 + j] = flipped ? swap03(i) * 4 + swap03(j) : i * 4 + j;
  }
  return slot;
}

// An `omp simd` loop over channels [0, n) of `body(c)`, in its x86-64-v3 and AVX-512 builds. The
// body is copied first: its pointers are then locals that the stores cannot change, so GCC keeps
// them in registers and vectorizes (through the caller's object it ran a scalar loop).
template <typename Body>
void channel_loop_v3(const Body& body, int64_t n) {
  const Body b = body;
#pragma omp simd
  for (int64_t c = 0; c < n; ++c) b(c);
}

template <typename Body>
TERN_CPU_V4_LOOP void channel_loop_v4(const Body& body, int64_t n) {
  const Body b = body;
#pragma omp simd
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

// V = B^T d B for the 4x4 tile d whose rows are in[0..15] (row-major; a row of zeros where the
// tile leaves the image), written to out[slot[xi]] + c.
struct InputTransform {
  const float* in[kTile];
  float* out[kTile];
  void operator()(int64_t c) const {
    float t[kTile];
#pragma GCC unroll 4
    for (int i = 0; i < 4; ++i) {  // columns: d B
      const float d0 = in[i * 4][c], d1 = in[i * 4 + 1][c], d2 = in[i * 4 + 2][c],
                  d3 = in[i * 4 + 3][c];
      t[i * 4] = d0 - d2;
      t[i * 4 + 1] = d1 + d2;
      t[i * 4 + 2] = d2 - d1;
      t[i * 4 + 3] = d1 - d3;
    }
#pragma GCC unroll 4
    for (int j = 0; j < 4; ++j) {  // rows: B^T (d B)
      const float r0 = t[j], r1 = t[4 + j], r2 = t[8 + j], r3 = t[12 + j];
      out[j][c] = r0 - r2;
      out[4 + j][c] = r1 + r2;
      out[8 + j][c] = r2 - r1;
      out[12 + j][c] = r1 - r3;
    }
  }
};

// The 2x2 output tile A^T m A from in[xi] + c, plus bias[c] and what out holds (a residual),
// relu (keeping NaN: NaN < 0 is false) when asked; out[r] is null for a pixel outside the
// output.
struct OutputTransform {
  const float* in[kTile];
  float* out[4];
  const float* bias;
  bool accumulate, relu;
  void operator()(int64_t c) const {
    float r[8];
#pragma GCC unroll 4
    for (int i = 0; i < 4; ++i) {  // columns: m A
      const float m0 = in[i * 4][c], m1 = in[i * 4 + 1][c], m2 = in[i * 4 + 2][c],
                  m3 = in[i * 4 + 3][c];
      r[i * 2] = m0 + m1 + m2;
      r[i * 2 + 1] = m1 - m2 - m3;
    }
    const float b = bias ? bias[c] : 0.0f;
#pragma GCC unroll 4
    for (int j = 0; j < 2; ++j) {  // rows: A^T (m A)
      float y[2] = {r[j] + r[2 + j] + r[4 + j], r[2 + j] - r[4 + j] - r[6 + j]};
#pragma GCC unroll 4
      for (int i = 0; i < 2; ++i) {
        float* o = out[i * 2 + j];
        if (o == nullptr) continue;
        float v = y[i] + b;
        if (accumulate) v += o[c];
        if (relu) v = v < 0.0f ? 0.0f : v;
        o[c] = v;
      }
    }
  }
};

// U = G g G^T for the 3x3 filter taps in[0..8] + c, written to out[slot[xi]] + c.
struct FilterTransform {
  const float* in[9];
  float* out[kTile];
  void operator()(int64_t c) const {
    float s[12];  // G g: 4 rows of 3
#pragma GCC unroll 4
    for (int j = 0; j < 3; ++j) {
      const float g0 = in[j][c], g1 = in[3 + j][c], g2 = in[6 + j][c];
      s[j] = g0;
      s[3 + j] = 0.5f * (g0 + g1 + g2);
      s[6 + j] = 0.5f * (g0 - g1 + g2);
      s[9 + j] = g2;
    }
#pragma GCC unroll 4
    for (int i = 0; i < 4; ++i) {  // (G g) G^T
      const float a = s[i * 3], b = s[i * 3 + 1], d = s[i * 3 + 2];
      out[i * 4][c] = a;
      out[i * 4 + 1][c] = 0.5f * (a + b + d);
      out[i * 4 + 2][c] = 0.5f * (a - b + d);
      out[i * 4 + 3][c] = d;
    }
  }
};

// W = A e A^T for the 2x2 dy tile e whose pixels are in[0..3] (zeros outside the output).
struct GradientTransform {
  const float* in[4];
  float* out[kTile];
  void operator()(int64_t c) const {
    const float e00 = in[0][c], e01 = in[1][c], e10 = in[2][c], e11 = in[3][c];
    const float r[8] = {e00, e01, e00 + e10, e01 + e11, e00 - e10, e01 - e11, -e10, -e11};
#pragma GCC unroll 4
    for (int i = 0; i < 4; ++i) {
      const float a = r[i * 2], b = r[i * 2 + 1];
      out[i * 4][c] = a;
      out[i * 4 + 1][c] = a + b;
      out[i * 4 + 2][c] = a - b;
      out[i * 4 + 3][c] = -b;
    }
  }
};

// dg = G^T q G for the 16 positions in[xi] + c of the transformed filter gradient, written to
// the 3x3 taps out[0..8] + c.
struct FilterGradientTransform {
  const float* in[kTile];
  float* out[9];
  void operator()(int64_t c) const {
    float s[12];  // G^T q: 3 rows of 4
#pragma GCC unroll 4
    for (int j = 0; j < 4; ++j) {
      const float q0 = in[j][c], q1 = in[4 + j][c], q2 = in[8 + j][c], q3 = in[12 + j][c];
      s[j] = q0 + 0.5f * (q1 + q2);
      s[4 + j] = 0.5f * (q1 - q2);
      s[8 + j] = 0.5f * (q1 + q2) + q3;
    }
#pragma GCC unroll 4
    for (int i = 0; i < 3; ++i) {  // (G^T q) G
      const float a = s[i * 4], b = s[i * 4 + 1], d = s[i * 4 + 2], e = s[i * 4 + 3];
      out[i * 3][c] = a + 0.5f * (b + d);
      out[i * 3 + 1][c] = 0.5f * (b - d);
      out[i * 3 + 2][c] = 0.5f * (b + d) + e;
    }
  }
};

// Work below this many bytes of a transform's output runs on one thread.
constexpr int64_t kParallelBytes = int64_t{1} << 16;

bool parallel_for(int64_t bytes) {
  return bytes >= kParallelBytes && !omp_in_parallel();
}

// V [16, tiles, c_in] of x (nhwc) for `g`, position xi in slot[xi]; `zeros` holds c_in zeros.
void input_transform(const ops::Conv2dGeometry& g, const std::array<int, kTile>& slot, bool v4,
                     const float* x, const float* zeros, float* v) {
  const int64_t th = tiles_h(g), tw = tiles_w(g), tiles = g.n * th * tw, c = g.c_in;
#pragma omp parallel for schedule(static) if (parallel_for(tiles * kTile * c * 4))
  for (int64_t t = 0; t < tiles; ++t) {
    const int64_t n = t / (th * tw), ty = (t / tw) % th, tx = t % tw;
    InputTransform body;
    for (int i = 0; i < 4; ++i) {
      const int64_t ih = 2 * ty - g.pad_top + i;
      for (int j = 0; j < 4; ++j) {
        const int64_t iw = 2 * tx - g.pad_left + j;
        const bool inside = ih >= 0 && ih < g.h && iw >= 0 && iw < g.w;
        body.in[i * 4 + j] = inside ? x + ((n * g.h + ih) * g.w + iw) * c : zeros;
        body.out[i * 4 + j] = v + (slot[i * 4 + j] * tiles + t) * c;
      }
    }
    channel_loop(v4, body, c);
  }
}

// U [16, a, b] of an HWIO filter [3, 3, a, b], position xi in slot xi.
void filter_transform(int64_t a, int64_t b, bool v4, const float* filter, float* u) {
#pragma omp parallel for schedule(static) if (parallel_for(a * b * kTile * 4))
  for (int64_t i = 0; i < a; ++i) {
    FilterTransform body;
    for (int k = 0; k < 9; ++k) body.in[k] = filter + (k * a + i) * b;
    for (int xi = 0; xi < kTile; ++xi) body.out[xi] = u + (xi * a + i) * b;
    channel_loop(v4, body, b);
  }
}

// A batched matmul over the 16 tile positions: c[s] (m x n) = a[s] (m x k) b[s] (k x n), each
// operand dense or read transposed (its last two dims swapped in the strides).
dnnl::memory::desc batch_desc(int64_t rows, int64_t cols, bool transposed) {
  const dnnl_dims dims{kTile, rows, cols};
  if (!transposed) return dense_desc(dims, DType::kF32);
  return dnnl::memory::desc(dims, dnnl_dt::f32, dnnl_dims{rows * cols, 1, rows});
}

void init_batch_gemm(PrimitiveRunner& runner, int64_t m, int64_t k, int64_t n, bool a_transposed,
                     bool b_transposed) {
  dnnl::memory::desc a = batch_desc(m, k, a_transposed);
  dnnl::memory::desc b = batch_desc(k, n, b_transposed);
  dnnl::memory::desc c = batch_desc(m, n, false);
  dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a, b, c), make_attr(), engine());
  runner.init<dnnl::matmul>(pd);
  runner.add_arg(DNNL_ARG_SRC, pd.src_desc());
  runner.add_arg(DNNL_ARG_WEIGHTS, pd.weights_desc());
  runner.add_arg(DNNL_ARG_DST, pd.dst_desc());
}

const float* zero_channels(int64_t c) {
  thread_local std::vector<float> zeros;
  if (static_cast<int64_t>(zeros.size()) < c) zeros.assign(static_cast<size_t>(c), 0.0f);
  return zeros.data();
}

}  // namespace

// --- WinogradF2Forward ---

WinogradF2Forward::WinogradF2Forward(const ops::Conv2dGeometry& g, bool flipped, const Epilogue& ep)
    : g_(g),
      flipped_(flipped),
      bias_(ep.bias_input >= 0),
      residual_(ep.residual_input >= 0),
      relu_(ep.activation == ops::Activation::kRelu),
      v4_(cpu_runs_v4_variants()) {
  TERN_CHECK(ep.activation == ops::Activation::kNone || relu_,
             "Winograd F(2x2, 3x3): an activation other than relu");
  chunk_ = winograd_f2_chunk_images(g);
  // Per chunk of images: M (tiles x c_out) = V (tiles x c_in) U, U read transposed for the
  // flipped filter (the transform of the HWIO [3, 3, c_out, c_in] filter is [16, c_out, c_in]).
  // The full chunk's GEMM, then the last, shorter chunk's (if any).
  for (int64_t n : {chunk_, g.n % chunk_}) {
    if (n == 0) continue;
    gemms_.emplace_back();
    init_batch_gemm(gemms_.back(), n * tiles_h(g) * tiles_w(g), g.c_in, g.c_out, false, flipped);
  }
}

void WinogradF2Forward::run(const void* x, const void* filter, bool constant_filter,
                            const void* bias, void* out) {
  const ops::Conv2dGeometry& g = g_;
  const size_t u_bytes = static_cast<size_t>(kTile * g.c_in * g.c_out) * sizeof(float);
  // The filter's transform: every run, or once for a constant filter (again if it moves).
  float* u = nullptr;
  if (constant_filter) {
    if (kept_.size() == 0) kept_ = AlignedBuffer(u_bytes);
    u = static_cast<float*>(kept_.data());
  } else {
    u = static_cast<float*>(layout_slot(0, u_bytes));
  }
  if (!constant_filter || kept_from_ != filter) {
    const int64_t a = flipped_ ? g.c_out : g.c_in, b = flipped_ ? g.c_in : g.c_out;
    filter_transform(a, b, v4_, static_cast<const float*>(filter), u);
    kept_from_ = constant_filter ? filter : nullptr;
  }
  const auto* in = static_cast<const float*>(x);
  auto* y = static_cast<float*>(out);
  for (int64_t first = 0; first < g.n; first += chunk_) {
    ops::Conv2dGeometry part = g;
    part.n = std::min(chunk_, g.n - first);
    run_chunk(part, part.n == chunk_ ? gemms_[0] : gemms_[1], in + first * g.h * g.w * g.c_in, u,
              static_cast<const float*>(bias_ ? bias : nullptr),
              y + first * g.out_h * g.out_w * g.c_out);
  }
}

void WinogradF2Forward::run_chunk(const ops::Conv2dGeometry& g, PrimitiveRunner& gemm,
                                  const float* x, const float* u, const float* bias, float* y) {
  const std::array<int, kTile> slot = tile_slots(flipped_);
  const int64_t th = tiles_h(g), tw = tiles_w(g), k = g.c_out, tiles = g.n * th * tw;
  auto* v = static_cast<float*>(
      layout_slot(kPatchesSlot, static_cast<size_t>(kTile * tiles * g.c_in) * sizeof(float)));
  input_transform(g, slot, v4_, x, zero_channels(g.c_in), v);
  auto* m = static_cast<float*>(
      layout_slot(kGemmResultSlot, static_cast<size_t>(kTile * tiles * k) * sizeof(float)));
  gemm.set(DNNL_ARG_SRC, v);
  gemm.set(DNNL_ARG_WEIGHTS, u);
  gemm.set(DNNL_ARG_DST, m);
  gemm.execute();

  // Output tiles: y (nhwc), plus the bias, the residual y holds, relu.
  const bool accumulate = residual_, relu = relu_, v4 = v4_;
#pragma omp parallel for schedule(static) if (parallel_for(tiles * 4 * k * 4))
  for (int64_t t = 0; t < tiles; ++t) {
    const int64_t n = t / (th * tw), ty = (t / tw) % th, tx = t % tw;
    OutputTransform body;
    for (int xi = 0; xi < kTile; ++xi) body.in[xi] = m + (slot[xi] * tiles + t) * k;
    for (int i = 0; i < 2; ++i) {
      for (int j = 0; j < 2; ++j) {
        const int64_t oh = 2 * ty + i, ow = 2 * tx + j;
        body.out[i * 2 + j] =
            oh < g.out_h && ow < g.out_w ? y + ((n * g.out_h + oh) * g.out_w + ow) * k : nullptr;
      }
    }
    body.bias = bias;
    body.accumulate = accumulate;
    body.relu = relu;
    channel_loop(v4, body, k);
  }
}

// --- WinogradF2FilterGradient ---

WinogradF2FilterGradient::WinogradF2FilterGradient(const ops::Conv2dGeometry& g)
    : g_(g), v4_(cpu_runs_v4_variants()) {
  tiles_ = g.n * tiles_h(g) * tiles_w(g);
  // dU (c_in x c_out) = V^T (V: tiles x c_in, read transposed) W (tiles x c_out).
  init_batch_gemm(gemm_, g.c_in, tiles_, g.c_out, true, false);
}

void WinogradF2FilterGradient::run(const void* x, const void* dy, void* dw) {
  const ops::Conv2dGeometry& g = g_;
  const std::array<int, kTile> slot = tile_slots(false);
  const int64_t tiles = tiles_, k = g.c_out, th = tiles_h(g), tw = tiles_w(g);
  const bool v4 = v4_;
  auto* v = static_cast<float*>(
      layout_slot(kPatchesSlot, static_cast<size_t>(kTile * tiles * g.c_in) * sizeof(float)));
  input_transform(g, slot, v4, static_cast<const float*>(x), zero_channels(g.c_in), v);

  auto* w =
      static_cast<float*>(layout_slot(0, static_cast<size_t>(kTile * tiles * k) * sizeof(float)));
  const auto* e = static_cast<const float*>(dy);
  const float* zeros = zero_channels(k);
#pragma omp parallel for schedule(static) if (parallel_for(tiles * kTile * k * 4))
  for (int64_t t = 0; t < tiles; ++t) {
    const int64_t n = t / (th * tw), ty = (t / tw) % th, tx = t % tw;
    GradientTransform body;
    for (int i = 0; i < 2; ++i) {
      for (int j = 0; j < 2; ++j) {
        const int64_t oh = 2 * ty + i, ow = 2 * tx + j;
        body.in[i * 2 + j] =
            oh < g.out_h && ow < g.out_w ? e + ((n * g.out_h + oh) * g.out_w + ow) * k : zeros;
      }
    }
    for (int xi = 0; xi < kTile; ++xi) body.out[xi] = w + (xi * tiles + t) * k;
    channel_loop(v4, body, k);
  }

  auto* du = static_cast<float*>(
      layout_slot(kGemmResultSlot, static_cast<size_t>(kTile * g.c_in * k) * sizeof(float)));
  gemm_.set(DNNL_ARG_SRC, v);
  gemm_.set(DNNL_ARG_WEIGHTS, w);
  gemm_.set(DNNL_ARG_DST, du);
  gemm_.execute();

  auto* out = static_cast<float*>(dw);
  const int64_t c_in = g.c_in;
#pragma omp parallel for schedule(static) if (parallel_for(c_in * 9 * k * 4))
  for (int64_t i = 0; i < c_in; ++i) {
    FilterGradientTransform body;
    for (int xi = 0; xi < kTile; ++xi) body.in[xi] = du + (xi * c_in + i) * k;
    for (int tap = 0; tap < 9; ++tap) body.out[tap] = out + (tap * c_in + i) * k;
    channel_loop(v4, body, k);
  }
}

}  // namespace tern::cpu::onednn

TERN_CPU_V3_END
