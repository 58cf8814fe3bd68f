// Fast sum / mean over one contiguous block of axes (f32, bf16 in, f32 accumulation; a bf16 x
// gives a bf16 result, or f32 with out_dtype = "f32"): the input is viewed as [outer, reduce,
// inner].
//   inner == 1 (last-axis rows): each row is summed with 32 AVX lanes in segments of kRowSegment.
//   inner > 1 (leading axes, e.g. the bias gradient [N, C] -> [C]): columns are summed in
//   registers, kColBlock columns by kRowChunk rows per task.
// Segment / chunk partials land in a scratch buffer planned once per node and are added in a
// fixed order, so results do not depend on the thread count (deterministic). OpenMP only above
// kParallelThreshold elements.
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <memory>

#include "tern/backends/cpu/cpu_isa.h"
#include "tern/backends/cpu/cpu_kernels.h"
#include "tern/backends/cpu/elementwise_loops.h"

TERN_CPU_V3_BEGIN  // the code below is x86-64-v3 (cpu_isa.h)

namespace tern::cpu {
namespace {

constexpr int64_t kParallelThreshold = 32768;
constexpr int64_t kRowSegment = 16384;  // elements of one row per task
constexpr int64_t kRowChunk = 256;      // rows of a column reduction per task
constexpr int64_t kColBlock = 512;      // columns of a column reduction per task

// --- 8-lane loads and the two summation loops ---

inline __m256 load8(const float* p) {
  return _mm256_loadu_ps(p);
}
inline __m256 load8(const bfloat16* p) {
  __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}

inline float horizontal_sum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));
  return _mm_cvtss_f32(s);
}

// Sum of n contiguous elements.
template <typename T>
float sum_contiguous(const T* p, int64_t n) {
  __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    a0 = _mm256_add_ps(a0, load8(p + i));
    a1 = _mm256_add_ps(a1, load8(p + i + 8));
    a2 = _mm256_add_ps(a2, load8(p + i + 16));
    a3 = _mm256_add_ps(a3, load8(p + i + 24));
  }
  for (; i + 8 <= n; i += 8) a0 = _mm256_add_ps(a0, load8(p + i));
  float s = horizontal_sum(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)));
  for (; i < n; ++i) s += to_f32(p[i]);
  return s;
}

// out[j] = sum over rows r of x[r * stride + j], for j in [0, cols).
template <typename T>
void sum_columns(const T* x, int64_t rows, int64_t stride, int64_t cols, float* out) {
  int64_t j = 0;
  for (; j + 32 <= cols; j += 32) {
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    for (int64_t r = 0; r < rows; ++r) {
      const T* p = x + r * stride + j;
      a0 = _mm256_add_ps(a0, load8(p));
      a1 = _mm256_add_ps(a1, load8(p + 8));
      a2 = _mm256_add_ps(a2, load8(p + 16));
      a3 = _mm256_add_ps(a3, load8(p + 24));
    }
    _mm256_storeu_ps(out + j, a0);
    _mm256_storeu_ps(out + j + 8, a1);
    _mm256_storeu_ps(out + j + 16, a2);
    _mm256_storeu_ps(out + j + 24, a3);
  }
  for (; j + 8 <= cols; j += 8) {
    __m256 a = _mm256_setzero_ps();
    for (int64_t r = 0; r < rows; ++r) a = _mm256_add_ps(a, load8(x + r * stride + j));
    _mm256_storeu_ps(out + j, a);
  }
  for (; j < cols; ++j) {
    float a = 0;
    for (int64_t r = 0; r < rows; ++r) a += to_f32(x[r * stride + j]);
    out[j] = a;
  }
}

// --- signature analysis ---

// The input as [outer, reduce, inner]; size-1 dims are ignored when checking contiguity.
struct ReduceView {
  int64_t outer = 1, reduce = 1, inner = 1;
};

std::string reduce_view(const kernels::KernelSignature& sig, ReduceView* view) {
  const Shape& in = sig.inputs[0].shape;
  const std::vector<int64_t>& axes = sig.attrs->get_ints("axes");
  std::vector<bool> reduced(static_cast<size_t>(in.rank()), axes.empty());
  for (int64_t a : axes) {
    if (a < -in.rank() || a >= in.rank()) return str_cat("axis ", a, " is out of range");
    reduced[static_cast<size_t>(a < 0 ? a + in.rank() : a)] = true;
  }
  int phase = 0;  // 0: before the reduced block, 1: inside it, 2: after it
  for (int i = 0; i < in.rank(); ++i) {
    int64_t d = in.dim(i);
    if (d == 1) continue;
    bool r = reduced[static_cast<size_t>(i)];
    if (r && phase == 2) return "reduced axes are not one contiguous block (ignoring size-1 dims)";
    if (r) phase = 1;
    if (!r && phase == 1) phase = 2;
    (r ? view->reduce : phase == 0 ? view->outer : view->inner) *= d;
  }
  return "";
}

class ReduceSumKernel final : public kernels::Kernel {
 public:
  explicit ReduceSumKernel(const kernels::KernelSignature& sig)
      : mean_(sig.op->name == "mean"),
        dtype_(sig.inputs[0].dtype),
        f32_out_(sig.outputs[0].dtype == DType::kF32) {
    reduce_view(sig, &v_);
    total_ = v_.outer * v_.reduce * v_.inner;
    if (v_.inner == 1) {
      parts_ = std::max<int64_t>(1, (v_.reduce + kRowSegment - 1) / kRowSegment);
      scratch_.resize(static_cast<size_t>(v_.outer * parts_));
    } else {
      parts_ = std::max<int64_t>(1, (v_.reduce + kRowChunk - 1) / kRowChunk);
      col_blocks_ = (v_.inner + kColBlock - 1) / kColBlock;
      scratch_.resize(static_cast<size_t>(v_.outer * parts_ * v_.inner));
    }
  }

  void run(kernels::KernelContext& ctx) override {
    if (dtype_ == DType::kF32) {
      run_typed<float, float>(ctx);
    } else if (f32_out_) {  // out_dtype = "f32"
      run_typed<bfloat16, float>(ctx);
    } else {
      run_typed<bfloat16, bfloat16>(ctx);
    }
  }

 private:
  // Y: the output's element type (T, or float for out_dtype = "f32").
  template <typename T, typename Y>
  void run_typed(kernels::KernelContext& ctx) {
    const T* x = ctx.inputs[0].data<T>();
    Y* y = ctx.outputs[0].data<Y>();
    const int64_t outer = v_.outer, reduce = v_.reduce, inner = v_.inner, parts = parts_;
    float* part = scratch_.data();
    if (inner == 1) {
#pragma omp parallel for schedule(static) if (total_ >= kParallelThreshold)
      for (int64_t t = 0; t < outer * parts; ++t) {
        int64_t o = t / parts, begin = (t % parts) * kRowSegment;
        part[t] = sum_contiguous(x + o * reduce + begin, std::min(kRowSegment, reduce - begin));
      }
    } else {
      const int64_t blocks = col_blocks_;
#pragma omp parallel for schedule(static) if (total_ >= kParallelThreshold)
      for (int64_t t = 0; t < outer * parts * blocks; ++t) {
        int64_t b = t % blocks, op = t / blocks, o = op / parts, c = op % parts;
        int64_t r0 = c * kRowChunk, j0 = b * kColBlock;
        sum_columns(x + (o * reduce + r0) * inner + j0, std::min(kRowChunk, reduce - r0), inner,
                    std::min(kColBlock, inner - j0), part + op * inner + j0);
      }
    }
    // Partials in a fixed order; an empty reduction gives 0 (sum) or NaN (mean), like ref.
    const float scale = mean_ ? 1.0f / static_cast<float>(reduce) : 1.0f;
    const bool empty = reduce == 0;
#pragma omp parallel for schedule(static) if (outer * inner * parts >= kParallelThreshold)
    for (int64_t o = 0; o < outer; ++o) {
      for (int64_t j = 0; j < inner; ++j) {
        float s = 0;
        for (int64_t c = 0; c < parts && !empty; ++c) s += part[(o * parts + c) * inner + j];
        y[o * inner + j] = static_cast<Y>(empty && mean_ ? NAN : s * scale);
      }
    }
  }

  ReduceView v_;
  bool mean_;
  DType dtype_;
  bool f32_out_;
  int64_t total_ = 0;
  int64_t parts_ = 1;       // row segments (inner == 1) or row chunks (inner > 1)
  int64_t col_blocks_ = 1;  // column blocks (inner > 1)
  std::vector<float> scratch_;
};

}  // namespace

void register_reduce_kernels(kernels::KernelRegistry& r) {
  for (std::string_view op : {"sum", "mean"}) {
    r.add(op,
          {.name = "cpu_vec",
           .dtypes = {DType::kF32, DType::kBF16},
           .priority = kVectorPriority,
           .deterministic = true,
           .decline = [](const kernels::KernelSignature& sig) -> std::string {
             const DType x = sig.inputs[0].dtype;
             if (x != DType::kF32 && x != DType::kBF16) {  // f16 x with an f32 result
               return str_cat("x is ", dtype_name(x), ": f32 or bf16 here");
             }
             ReduceView v;
             return reduce_view(sig, &v);
           },
           .create = [](const kernels::KernelSignature& sig) -> std::unique_ptr<kernels::Kernel> {
             return std::make_unique<ReduceSumKernel>(sig);
           }});
  }
}

}  // namespace tern::cpu

TERN_CPU_V3_END
