// Fast transpose for every dtype (moved by element size). The permutation is first simplified
// once per node: size-1 dims dropped, input dims that stay adjacent in the output merged (NHWC ->
// NCHW becomes [N, HW, C] -> [N, C, HW]). Then:
//   identity                 one memcpy
//   last dim stays last      row copies (memcpy per output row)
//   otherwise                batched 2-D transposes between the input's last dim and the output's
//                            last dim, in 8x8 register tiles for 4- and 2-byte elements (AVX / SSE)
//                            and 16-wide cache tiles for other sizes.
// Work is split into tasks of kRowBlock x kColBlock; OpenMP only above kParallelThreshold elements.
// Pure data movement: bitwise equal to ref, deterministic.
#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <type_traits>

#include "tern/backends/cpu/cpu_isa.h"
#include "tern/backends/cpu/cpu_kernels.h"
#include "tern/backends/cpu/small_gemm.h"

TERN_CPU_V3_BEGIN  // the code below is x86-64-v3 (cpu_isa.h)

namespace tern::cpu {
namespace {

constexpr int64_t kParallelThreshold = 32768;
constexpr int64_t kRowBlock = 64;   // rows of the 2-D block per task
constexpr int64_t kColBlock = 256;  // columns of the 2-D block per task

// --- tile transposes: dst[j * ds + i] = src[i * ss + j] for i < rows, j < cols ---

inline void transpose8x8(const float* s, int64_t ss, float* d, int64_t ds) {
  __m256 r0 = _mm256_loadu_ps(s), r1 = _mm256_loadu_ps(s + ss), r2 = _mm256_loadu_ps(s + 2 * ss),
         r3 = _mm256_loadu_ps(s + 3 * ss), r4 = _mm256_loadu_ps(s + 4 * ss),
         r5 = _mm256_loadu_ps(s + 5 * ss), r6 = _mm256_loadu_ps(s + 6 * ss),
         r7 = _mm256_loadu_ps(s + 7 * ss);
  __m256 t0 = _mm256_unpacklo_ps(r0, r1), t1 = _mm256_unpackhi_ps(r0, r1);
  __m256 t2 = _mm256_unpacklo_ps(r2, r3), t3 = _mm256_unpackhi_ps(r2, r3);
  __m256 t4 = _mm256_unpacklo_ps(r4, r5), t5 = _mm256_unpackhi_ps(r4, r5);
  __m256 t6 = _mm256_unpacklo_ps(r6, r7), t7 = _mm256_unpackhi_ps(r6, r7);
  __m256 u0 = _mm256_shuffle_ps(t0, t2, _MM_SHUFFLE(1, 0, 1, 0));
  __m256 u1 = _mm256_shuffle_ps(t0, t2, _MM_SHUFFLE(3, 2, 3, 2));
  __m256 u2 = _mm256_shuffle_ps(t1, t3, _MM_SHUFFLE(1, 0, 1, 0));
  __m256 u3 = _mm256_shuffle_ps(t1, t3, _MM_SHUFFLE(3, 2, 3, 2));
  __m256 u4 = _mm256_shuffle_ps(t4, t6, _MM_SHUFFLE(1, 0, 1, 0));
  __m256 u5 = _mm256_shuffle_ps(t4, t6, _MM_SHUFFLE(3, 2, 3, 2));
  __m256 u6 = _mm256_shuffle_ps(t5, t7, _MM_SHUFFLE(1, 0, 1, 0));
  __m256 u7 = _mm256_shuffle_ps(t5, t7, _MM_SHUFFLE(3, 2, 3, 2));
  _mm256_storeu_ps(d, _mm256_permute2f128_ps(u0, u4, 0x20));
  _mm256_storeu_ps(d + ds, _mm256_permute2f128_ps(u1, u5, 0x20));
  _mm256_storeu_ps(d + 2 * ds, _mm256_permute2f128_ps(u2, u6, 0x20));
  _mm256_storeu_ps(d + 3 * ds, _mm256_permute2f128_ps(u3, u7, 0x20));
  _mm256_storeu_ps(d + 4 * ds, _mm256_permute2f128_ps(u0, u4, 0x31));
  _mm256_storeu_ps(d + 5 * ds, _mm256_permute2f128_ps(u1, u5, 0x31));
  _mm256_storeu_ps(d + 6 * ds, _mm256_permute2f128_ps(u2, u6, 0x31));
  _mm256_storeu_ps(d + 7 * ds, _mm256_permute2f128_ps(u3, u7, 0x31));
}

inline void transpose8x8(const uint16_t* s, int64_t ss, uint16_t* d, int64_t ds) {
  auto row = [&](int64_t i) {
    return _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i * ss));
  };
  __m128i a0 = row(0), a1 = row(1), a2 = row(2), a3 = row(3), a4 = row(4), a5 = row(5), a6 = row(6),
          a7 = row(7);
  __m128i b0 = _mm_unpacklo_epi16(a0, a1), b1 = _mm_unpackhi_epi16(a0, a1);
  __m128i b2 = _mm_unpacklo_epi16(a2, a3), b3 = _mm_unpackhi_epi16(a2, a3);
  __m128i b4 = _mm_unpacklo_epi16(a4, a5), b5 = _mm_unpackhi_epi16(a4, a5);
  __m128i b6 = _mm_unpacklo_epi16(a6, a7), b7 = _mm_unpackhi_epi16(a6, a7);
  __m128i c0 = _mm_unpacklo_epi32(b0, b2), c1 = _mm_unpackhi_epi32(b0, b2);
  __m128i c2 = _mm_unpacklo_epi32(b1, b3), c3 = _mm_unpackhi_epi32(b1, b3);
  __m128i c4 = _mm_unpacklo_epi32(b4, b6), c5 = _mm_unpackhi_epi32(b4, b6);
  __m128i c6 = _mm_unpacklo_epi32(b5, b7), c7 = _mm_unpackhi_epi32(b5, b7);
  auto store = [&](int64_t j, __m128i v) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(d + j * ds), v);
  };
  store(0, _mm_unpacklo_epi64(c0, c4));
  store(1, _mm_unpackhi_epi64(c0, c4));
  store(2, _mm_unpacklo_epi64(c1, c5));
  store(3, _mm_unpackhi_epi64(c1, c5));
  store(4, _mm_unpacklo_epi64(c2, c6));
  store(5, _mm_unpackhi_epi64(c2, c6));
  store(6, _mm_unpacklo_epi64(c3, c7));
  store(7, _mm_unpackhi_epi64(c3, c7));
}

template <typename E>
void transpose_tile_scalar(const E* s, int64_t ss, E* d, int64_t ds, int64_t rows, int64_t cols) {
  for (int64_t j0 = 0; j0 < cols; j0 += 16) {
    int64_t j1 = std::min(cols, j0 + 16);
    for (int64_t i = 0; i < rows; ++i) {
      for (int64_t j = j0; j < j1; ++j) d[j * ds + i] = s[i * ss + j];
    }
  }
}

template <typename E>
void transpose_tile(const E* s, int64_t ss, E* d, int64_t ds, int64_t rows, int64_t cols) {
  if constexpr (sizeof(E) == 4 || sizeof(E) == 2) {
    // 4-byte bit patterns move through float registers unchanged (shuffles only).
    using V = std::conditional_t<sizeof(E) == 4, float, uint16_t>;
    const V* vs = reinterpret_cast<const V*>(s);
    V* vd = reinterpret_cast<V*>(d);
    int64_t r8 = rows / 8 * 8, c8 = cols / 8 * 8;
    for (int64_t j = 0; j < c8; j += 8) {
      for (int64_t i = 0; i < r8; i += 8) transpose8x8(vs + i * ss + j, ss, vd + j * ds + i, ds);
    }
    if (r8 < rows) transpose_tile_scalar(s + r8 * ss, ss, d + r8, ds, rows - r8, cols);
    if (c8 < cols) transpose_tile_scalar(s + c8, ss, d + c8 * ds, ds, r8, cols - c8);
  } else {
    transpose_tile_scalar(s, ss, d, ds, rows, cols);
  }
}

// --- plan ---

// A transpose after simplification: output dim i is input dim perm[i] of `dims`.
struct TransposePlan {
  std::vector<int64_t> dims, perm;
};

TransposePlan simplify(const Shape& in, std::vector<int64_t> perm) {
  int r = in.rank();
  if (perm.empty()) {
    for (int i = r - 1; i >= 0; --i) perm.push_back(i);
  }
  // Runs of input dims that stay consecutive in the output (size-1 dims skipped).
  std::vector<std::vector<int64_t>> runs;
  for (int64_t p : perm) {
    if (in.dim(static_cast<int>(p)) == 1) continue;
    if (!runs.empty() && runs.back().back() + 1 == p) {
      runs.back().push_back(p);
    } else if (!runs.empty()) {
      // Skipped size-1 dims between two input dims do not break adjacency.
      int64_t last = runs.back().back();
      bool adjacent = p > last;
      for (int64_t q = last + 1; adjacent && q < p; ++q)
        adjacent = in.dim(static_cast<int>(q)) == 1;
      if (adjacent) {
        runs.back().push_back(p);
      } else {
        runs.push_back({p});
      }
    } else {
      runs.push_back({p});
    }
  }
  std::vector<size_t> by_input(runs.size());
  for (size_t i = 0; i < runs.size(); ++i) by_input[i] = i;
  std::sort(by_input.begin(), by_input.end(),
            [&](size_t a, size_t b) { return runs[a][0] < runs[b][0]; });
  TransposePlan plan;
  plan.perm.resize(runs.size());
  for (size_t k = 0; k < by_input.size(); ++k) {
    int64_t d = 1;
    for (int64_t p : runs[by_input[k]]) d *= in.dim(static_cast<int>(p));
    plan.dims.push_back(d);
    plan.perm[by_input[k]] = static_cast<int64_t>(k);
  }
  return plan;
}

class TransposeKernel final : public kernels::Kernel {
 public:
  explicit TransposeKernel(const kernels::KernelSignature& sig)
      : esize_(dtype_size(sig.inputs[0].dtype)), total_(sig.inputs[0].shape.num_elements()) {
    TransposePlan plan = simplify(sig.inputs[0].shape, sig.attrs->get_ints("perm"));
    int k = static_cast<int>(plan.dims.size());
    identity_ = true;
    for (int i = 0; i < k; ++i) identity_ = identity_ && plan.perm[static_cast<size_t>(i)] == i;
    if (identity_ || total_ == 0) return;
    std::vector<int64_t> in_strides(static_cast<size_t>(k)), out_dims(static_cast<size_t>(k));
    int64_t s = 1;
    for (int i = k - 1; i >= 0; --i) {
      in_strides[static_cast<size_t>(i)] = s;
      s *= plan.dims[static_cast<size_t>(i)];
    }
    std::vector<int64_t> out_strides(static_cast<size_t>(k));
    s = 1;
    for (int i = k - 1; i >= 0; --i) {
      out_dims[static_cast<size_t>(i)] =
          plan.dims[static_cast<size_t>(plan.perm[static_cast<size_t>(i)])];
      out_strides[static_cast<size_t>(i)] = s;
      s *= out_dims[static_cast<size_t>(i)];
    }
    int last_in = k - 1;
    int a = static_cast<int>(plan.perm[static_cast<size_t>(k - 1)]);  // input dim that ends up last
    int b = static_cast<int>(std::find(plan.perm.begin(), plan.perm.end(), last_in) -
                             plan.perm.begin());
    rows_copy_ = a == last_in;
    // Batch dims: every output position except the output's last (and, for tiles, b).
    for (int i = 0; i < k - 1; ++i) {
      if (!rows_copy_ && i == b) continue;
      batch_dims_.push_back(out_dims[static_cast<size_t>(i)]);
      batch_in_.push_back(in_strides[static_cast<size_t>(plan.perm[static_cast<size_t>(i)])]);
      batch_out_.push_back(out_strides[static_cast<size_t>(i)]);
    }
    rows_ = plan.dims[static_cast<size_t>(a)];
    cols_ = plan.dims[static_cast<size_t>(last_in)];
    src_stride_ = in_strides[static_cast<size_t>(a)];
    dst_stride_ = rows_copy_ ? 0 : out_strides[static_cast<size_t>(b)];
  }

  void run(kernels::KernelContext& ctx) override {
    const Tensor& x = ctx.inputs[0];
    Tensor& y = ctx.outputs[0];
    if (identity_) {
      if (total_ > 0) std::memcpy(y.raw_data(), x.raw_data(), x.nbytes());
      return;
    }
    if (total_ == 0) return;
    switch (esize_) {
      case 1:
        run_typed<uint8_t>(x, y);
        break;
      case 2:
        run_typed<uint16_t>(x, y);
        break;
      case 4:
        run_typed<uint32_t>(x, y);
        break;
      default:
        run_typed<uint64_t>(x, y);
        break;
    }
  }

 private:
  // Input and output offsets of batch index `n`.
  void batch_offsets(int64_t n, int64_t* in, int64_t* out) const {
    *in = 0;
    *out = 0;
    for (size_t i = batch_dims_.size(); i-- > 0;) {
      int64_t c = n % batch_dims_[i];
      n /= batch_dims_[i];
      *in += c * batch_in_[i];
      *out += c * batch_out_[i];
    }
  }

  template <typename E>
  void run_typed(const Tensor& x, Tensor& y) const {
    const E* src = static_cast<const E*>(x.raw_data());
    E* dst = static_cast<E*>(y.raw_data());
    int64_t batches = 1;
    for (int64_t d : batch_dims_) batches *= d;
    if (rows_copy_) {
      // Each batch index is one output row of cols_ contiguous elements.
      size_t row_bytes = static_cast<size_t>(cols_) * sizeof(E);
#pragma omp parallel for schedule(static) if (total_ >= kParallelThreshold)
      for (int64_t n = 0; n < batches; ++n) {
        int64_t in, out;
        batch_offsets(n, &in, &out);
        std::memcpy(dst + out, src + in, row_bytes);
      }
      return;
    }
    int64_t row_blocks = (rows_ + kRowBlock - 1) / kRowBlock;
    int64_t col_blocks = (cols_ + kColBlock - 1) / kColBlock;
    int64_t blocks = row_blocks * col_blocks;
#pragma omp parallel for schedule(static) if (total_ >= kParallelThreshold)
    for (int64_t t = 0; t < batches * blocks; ++t) {
      int64_t n = t / blocks, b = t % blocks;
      int64_t i0 = b / col_blocks * kRowBlock, j0 = b % col_blocks * kColBlock;
      int64_t in, out;
      batch_offsets(n, &in, &out);
      transpose_tile(src + in + i0 * src_stride_ + j0, src_stride_,
                     dst + out + j0 * dst_stride_ + i0, dst_stride_,
                     std::min(kRowBlock, rows_ - i0), std::min(kColBlock, cols_ - j0));
    }
  }

  size_t esize_;
  int64_t total_;
  bool identity_ = false;
  bool rows_copy_ = false;
  std::vector<int64_t> batch_dims_, batch_in_, batch_out_;
  int64_t rows_ = 0, cols_ = 0, src_stride_ = 0, dst_stride_ = 0;
};

}  // namespace

// small_gemm.h's transpose_f32 where the CPU has no AVX-512: these tiles.
void detail::transpose_f32_v3(int64_t rows, int64_t cols, const float* src, int64_t lds, float* dst,
                              int64_t ldd) {
  transpose_tile(src, lds, dst, ldd, rows, cols);
}

void register_transpose_kernels(kernels::KernelRegistry& r) {
  r.add("transpose",
        {.name = "cpu_vec",
         .dtypes = {DType::kF32, DType::kF64, DType::kBF16, DType::kF16, DType::kI8, DType::kU8,
                    DType::kI32, DType::kI64, DType::kBool},
         .priority = kVectorPriority,
         .deterministic = true,
         .create = [](const kernels::KernelSignature& sig) -> std::unique_ptr<kernels::Kernel> {
           return std::make_unique<TransposeKernel>(sig);
         }});
}

}  // namespace tern::cpu

TERN_CPU_V3_END
