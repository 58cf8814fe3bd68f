// Elementwise kernel machinery: OpenMP range splitting, 16-bit float block conversion (bf16 by
// bit manipulation the compiler vectorizes, f16 with the F16C instructions of x86-64-v3), and
// the search for a 2-D view of a broadcast.
#include "tern/backends/cpu/elementwise_loops.h"

#include <immintrin.h>
#include <omp.h>

#include <bit>

#include "tern/backends/cpu/cpu_isa.h"

TERN_CPU_V3_BEGIN  // the code below is x86-64-v3 (cpu_isa.h)

namespace tern::cpu {

void parallel_ranges(int64_t n, const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  int threads = omp_get_max_threads();
  if (n <= kParallelThreshold || threads <= 1 || omp_in_parallel()) {
    fn(0, n);
    return;
  }
  int64_t pieces = std::min<int64_t>(threads, n / (kParallelThreshold / 2));
  // Piece boundaries are multiples of 64 elements so pieces never share a cache line.
  auto boundary = [&](int64_t t) { return t == pieces ? n : (n * t / pieces) / 64 * 64; };
#pragma omp parallel for num_threads(static_cast <int>(pieces)) schedule(static, 1)
  for (int64_t t = 0; t < pieces; ++t) fn(boundary(t), boundary(t + 1));
}

// --- 16-bit floats ---

namespace {

[[gnu::always_inline]] inline void bf16_to_float_body(const bfloat16* in, float* out, int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) out[i] = bf16_bits_to_float(in[i].bits);
}

// Same rounding as bfloat16::from_float: nearest even, NaN kept quiet.
[[gnu::always_inline]] inline void float_to_bf16_body(const float* in, bfloat16* out, int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) out[i].bits = float_to_bf16_bits(in[i]);
}

// The rounding loop for AVX-512 (16 lanes): an f32 -> bf16 cast of [4096, 256] on 2 threads (Zen 5,
// kernel_ab_bench) 0.065 -> 0.038 ms, where the x86-64-v3 build was bound by the rounding's integer
// operations (the widening, a shift, runs at memory speed either way: 0.031 ms).
TERN_CPU_V4_LOOP void float_to_bf16_v4(const float* in, bfloat16* out, int64_t n) {
  float_to_bf16_body(in, out, n);
}

}  // namespace

void to_float(const bfloat16* in, float* out, int64_t n) {
  bf16_to_float_body(in, out, n);
}

void from_float(const float* in, bfloat16* out, int64_t n) {
  static const bool v4 = cpu_runs_v4_variants();
  if (v4) return float_to_bf16_v4(in, out, n);
  float_to_bf16_body(in, out, n);
}

void to_float(const float16* in, float* out, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i));
    _mm256_storeu_ps(out + i, _mm256_cvtph_ps(h));
  }
  for (; i < n; ++i) out[i] = _cvtsh_ss(in[i].bits);
}

void from_float(const float* in, float16* out, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(in + i), _MM_FROUND_TO_NEAREST_INT);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), h);
  }
  for (; i < n; ++i) out[i].bits = _cvtss_sh(in[i], _MM_FROUND_TO_NEAREST_INT);
}

// --- broadcast as 2-D ---

namespace {

int64_t product(const std::vector<int64_t>& dims, size_t begin, size_t end) {
  int64_t p = 1;
  for (size_t i = begin; i < end; ++i) p *= dims[i];
  return p;
}

// dims[begin, end) equal `out`'s (match) or are all 1 (ones).
struct Part {
  bool match = true;
  bool ones = true;
};

Part classify(const std::vector<int64_t>& dims, const std::vector<int64_t>& out, size_t begin,
              size_t end) {
  Part p;
  for (size_t i = begin; i < end; ++i) {
    p.match = p.match && dims[i] == out[i];
    p.ones = p.ones && dims[i] == 1;
  }
  return p;
}

}  // namespace

std::string plan_broadcast(std::span<const Shape> operands, const Shape& out, BroadcastPlan* plan) {
  const std::vector<int64_t>& od = out.dims();
  size_t rank = od.size();
  // Operand dims right-aligned to the output rank.
  std::vector<std::vector<int64_t>> aligned;
  for (const Shape& s : operands) {
    if (static_cast<size_t>(s.rank()) > rank) return "an operand has a higher rank than the output";
    std::vector<int64_t> d(rank - static_cast<size_t>(s.rank()), 1);
    d.insert(d.end(), s.dims().begin(), s.dims().end());
    aligned.push_back(std::move(d));
  }
  // The smallest split works best: it gives the longest rows.
  for (size_t split = 0; split <= rank; ++split) {
    BroadcastPlan p;
    p.rows = product(od, 0, split);
    p.cols = product(od, split, rank);
    bool ok = true;
    for (const auto& d : aligned) {
      Part outer = classify(d, od, 0, split), inner = classify(d, od, split, rank);
      if (!(outer.match || outer.ones) || !(inner.match || inner.ones)) {
        ok = false;
        break;
      }
      BroadcastOperand o;
      o.contiguous = inner.match;
      o.row_stride = outer.match ? (inner.match ? p.cols : 1) : 0;
      p.operands.push_back(o);
    }
    if (ok) {
      *plan = std::move(p);
      return "";
    }
  }
  std::string shapes;
  for (const Shape& s : operands) shapes += (shapes.empty() ? "" : " with ") + s.to_string();
  return "broadcast of " + shapes + " is not same-shape, scalar, row or column";
}

std::string plan_broadcast(const kernels::KernelSignature& sig, BroadcastPlan* plan) {
  std::vector<Shape> shapes;
  for (const TensorType& t : sig.inputs) shapes.push_back(t.shape);
  return plan_broadcast(shapes, sig.outputs[0].shape, plan);
}

}  // namespace tern::cpu

TERN_CPU_V3_END
