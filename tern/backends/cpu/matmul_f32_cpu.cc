// cpu_matmul_f32: rows of f32 products C = a b or a b^T (+ a bias) on small_gemm's AVX-512
// tiles (6 x 64 of C in registers), for many rows against a small b: a [M, K] read in place, b
// read in place (or, for a b^T, transposed once per call into the calling thread's buffer), the
// rows of C in blocks of kRowBlock over the threads, the next block's rows of a prefetched, the
// bias added as the tiles are stored. Taken where it was measured ahead of oneDNN 2.6's brgemm
// matmul: at least kMinRows rows, K and N at most kMaxDepth / kMaxColumns (b at most 256 KB, which
// stays in a core's L2 while every block of rows reads it). W6's attention projections, [4096,
// 256] x [256, 256] on 2 Zen 5 cores (a throwaway program, 8 operand sets in rotation so they
// come from memory, medians of 40): oneDNN 1.36 ms, these tiles 1.19; operands in L3 1.28 against
// 1.14; hot, both 1.05-1.07. Not FFN-sized b ([256, 1024]: 4.79-4.93 against oneDNN's 4.60-4.74 ms;
// [1024, 256]: 5.37 against 5.16), which oneDNN keeps. Each element of C sums its K in the same
// order whatever the thread count.
//
// cpu_weight_grad_f32: C = a^T b (a [K, M], b [K, N]: x^T dy) for a K of at least kMinDepth and a
// C of at most kMaxResultBytes, on the same tiles reading a transposed in place: two threads over
// the two halves of K (each row of a and b read once), in blocks of kDepthBlock rows, the second
// half's sum added after (the bf16 weight gradient's scheme, matmul_bf16_cpu.cc). oneDNN 2.6's
// brgemm reads a deep transposed `a` slowly (onednn_matmul.cc). W6's attention projections'
// weight gradients, [4096, 256]^T [4096, 256] on 2 Zen 5 cores (kernel_ab_bench over 8
// independent products, operands from memory, interleaved): oneDNN 1.47-1.54 ms per product,
// these tiles 1.37-1.39 (blocks of 64 rows 1.46, of 256 1.37; the next block prefetched into L2:
// no change; the threads over C's columns instead of K's halves: 1.60-1.65); in W6's step
// (`workloads_bench --profile`, 2 interleaved rounds) the 16 nodes 25.0-25.8 -> 23.2-23.3 ms.
// Other shapes within the rule, 4 independent products each (oneDNN -> these tiles, ms per
// product): [4096, 64]^T [4096, 2048] (oneDNN's swapped form) 3.29 -> 3.11, [2048, 128]^T
// [2048, 512] 0.77 -> 0.67, [8192, 128]^T [8192, 128] 0.91 -> 0.76, [2048, 256]^T [2048, 256]
// 0.68 -> 0.66, [4096, 512]^T [4096, 256] 2.82 -> 2.82.
// FFN-sized C (1 MB: [4096, 256]^T [4096, 1024] and its mirror) stays on oneDNN's swapped form:
// these tiles 5.66-5.87 ms against oneDNN's 5.55-5.75, C whole or in chunks of 256 KB to 1 MB
// (blocks of 64 rows 6.25).
//
// Both: AMD CPUs with AVX-512, where they were measured.
#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <vector>

#include "tern/backends/cpu/cpu_isa.h"
#include "tern/backends/cpu/cpu_kernels.h"
#include "tern/backends/cpu/depth_halves.h"
#include "tern/backends/cpu/onednn_common.h"
#include "tern/backends/cpu/small_gemm.h"
#include "tern/base/error.h"
#include "tern/base/strings.h"

TERN_CPU_V3_BEGIN

namespace tern::cpu {
namespace {

constexpr int64_t kRowBlock = 48;  // rows of C per small_gemm_bias call
constexpr int64_t kMinRows = 4096;
constexpr int64_t kMaxDepth = 256;
constexpr int64_t kMaxColumns = 256;

// The products this kernel serves: 2-D a b or a b^T with f32 operands and result, at least
// kMinRows rows, K and N within the measured range; fused: a bias only.
std::string decline(const kernels::KernelSignature& sig) {
  const ops::Attrs& attrs = *sig.attrs;
  if (attrs.get_bool("transpose_a")) return "a transposed";
  for (const TensorType& t : sig.inputs) {
    if (t.dtype != DType::kF32) return "operands not f32";
  }
  if (sig.outputs[0].dtype != DType::kF32) return "result not f32";
  const Shape &a = sig.inputs[0].shape, &b = sig.inputs[1].shape;
  if (a.rank() != 2 || b.rank() != 2) return "operands not 2-D";
  const int64_t n = b[attrs.get_bool("transpose_b") ? 0 : 1];
  if (a[0] < kMinRows) return str_cat("fewer than ", kMinRows, " rows");
  if (a[1] == 0 || a[1] > kMaxDepth) return str_cat("K not in [1, ", kMaxDepth, "]");
  if (n == 0 || n > kMaxColumns) return str_cat("N not in [1, ", kMaxColumns, "]");
  int bias_input;
  return onednn::bias_only_epilogue(sig, &bias_input);
}

class RowsF32Kernel final : public kernels::Kernel {
 public:
  explicit RowsF32Kernel(const kernels::KernelSignature& sig)
      : m_(sig.inputs[0].shape[0]),
        k_(sig.inputs[0].shape[1]),
        transpose_b_(sig.attrs->get_bool("transpose_b")),
        n_(sig.inputs[1].shape[transpose_b_ ? 0 : 1]),
        bias_input_(sig.op->name == "fused_matmul" ? onednn::fused_epilogue(*sig.attrs).bias_input
                                                   : -1) {}

  void run(kernels::KernelContext& ctx) override {
    const float* a = ctx.inputs[0].data<float>();
    const float* b = ctx.inputs[1].data<float>();
    const float* bias =
        bias_input_ >= 0 ? ctx.inputs[static_cast<size_t>(bias_input_)].data<float>() : nullptr;
    float* c = ctx.outputs[0].data<float>();
    thread_local std::vector<float> transposed;  // the calling thread's: b^T, [k][n]
    if (transpose_b_) transposed.resize(static_cast<size_t>(k_ * n_));
    float* bt = transposed.data();
    const int64_t blocks = (m_ + kRowBlock - 1) / kRowBlock;
#pragma omp parallel if (!omp_in_parallel())
    {
      if (transpose_b_) {  // b [n, k]: each thread transposes its share of b's rows
        const int threads = omp_get_num_threads(), t = omp_get_thread_num();
        const int64_t j0 = n_ * t / threads, j1 = n_ * (t + 1) / threads;
        transpose_f32(j1 - j0, k_, b + j0 * k_, k_, bt + j0, n_);
#pragma omp barrier
      }
      const float* bk = transpose_b_ ? bt : b;
#pragma omp for schedule(static)
      for (int64_t block = 0; block < blocks; ++block) {
        const int64_t i = block * kRowBlock, rows = std::min(kRowBlock, m_ - i);
        if (block + 1 < blocks) {  // the next block's rows of a, into L2
          const int64_t next = std::min(kRowBlock, m_ - i - rows);
          const char* p = reinterpret_cast<const char*>(a + (i + rows) * k_);
          for (int64_t off = 0; off < next * k_ * 4; off += 64) _mm_prefetch(p + off, _MM_HINT_T1);
        }
        small_gemm_bias(rows, n_, k_, a + i * k_, k_, bk, n_, c + i * n_, n_, bias);
      }
    }
  }

 private:
  int64_t m_, k_;
  bool transpose_b_;
  int64_t n_;
  int bias_input_;
};

// --- Weight gradients: C = a^T b (a [K, M], b [K, N]; x^T dy) with a deep K and a small C ---

constexpr int64_t kDepthBlock = 128;  // rows of a and b per small_gemm call: b's 128 x 64 panel
                                      // (32 KB) stays in L1 while C's row tiles go by
constexpr int64_t kMinDepth = 2048;
constexpr int64_t kMaxResultBytes = 512 << 10;  // C and the second half's partial sum in L2

// The products this kernel serves: plain 2-D a^T b in f32, K of at least kMinDepth, C of at most
// kMaxResultBytes.
std::string decline_weight_grad(const kernels::KernelSignature& sig) {
  const ops::Attrs& attrs = *sig.attrs;
  if (!attrs.get_bool("transpose_a") || attrs.get_bool("transpose_b")) return "not a^T b";
  for (const TensorType& t : sig.inputs) {
    if (t.dtype != DType::kF32) return "operands not f32";
  }
  if (sig.outputs[0].dtype != DType::kF32) return "result not f32";
  const Shape &a = sig.inputs[0].shape, &b = sig.inputs[1].shape;
  if (a.rank() != 2 || b.rank() != 2) return "operands not 2-D";
  if (a[0] < kMinDepth) return str_cat("K below ", kMinDepth);
  if (a[1] == 0 || b[1] == 0) return "empty";
  if (a[1] * b[1] * 4 > kMaxResultBytes) return str_cat("C above ", kMaxResultBytes, " bytes");
  return "";
}

// C [m, n] = rows [k0, k1) of a^T b, in blocks of kDepthBlock rows.
void weight_grad_part(int64_t m, int64_t n, const float* a, const float* b, float* c, int64_t k0,
                      int64_t k1) {
  for (int64_t p = k0; p < k1; p += kDepthBlock) {
    const int64_t rows = std::min(kDepthBlock, k1 - p);
    if (p == k0) {
      small_gemm(true, m, n, rows, 1.0f, a + p * m, m, b + p * n, n, c, n);
    } else {
      small_gemm_acc(true, m, n, rows, a + p * m, m, b + p * n, n, c, n);
    }
  }
}

// C = (the first half of K's product) + (the second half's, made into the thread's buffer): the
// two threads read each row of a and b once.
class WeightGradF32Kernel final : public kernels::Kernel {
 public:
  explicit WeightGradF32Kernel(const kernels::KernelSignature& sig)
      : k_(sig.inputs[0].shape[0]), m_(sig.inputs[0].shape[1]), n_(sig.inputs[1].shape[1]) {}

  void run(kernels::KernelContext& ctx) override {
    const float* a = ctx.inputs[0].data<float>();
    const float* b = ctx.inputs[1].data<float>();
    float* c = ctx.outputs[0].data<float>();
    const int64_t half = (k_ / 2 + kDepthBlock - 1) / kDepthBlock * kDepthBlock;
    sum_depth_halves(k_, half, m_ * n_, c, [&](int64_t k0, int64_t k1, float* dst) {
      weight_grad_part(m_, n_, a, b, dst, k0, k1);
    });
  }

 private:
  int64_t k_, m_, n_;
};

// A candidate ahead of oneDNN's matmul where it applies.
template <typename K>
kernels::KernelCandidate candidate(std::string name,
                                   std::string (*decline)(const kernels::KernelSignature&)) {
  kernels::KernelCandidate c;
  c.name = name;
  c.dtypes = {DType::kF32};
  c.priority = kOneDnnPriority + 5;
  c.decline = decline;
  c.create = [name,
              decline](const kernels::KernelSignature& sig) -> std::unique_ptr<kernels::Kernel> {
    std::string why = decline(sig);
    if (!why.empty()) throw_error(ErrorCode::kInternal, name, " ", sig.to_string(), ": ", why);
    return std::make_unique<K>(sig);
  };
  return c;
}

}  // namespace

void register_matmul_f32_kernels(kernels::KernelRegistry& r) {
  // Measured on Zen 5 only: AMD CPUs with AVX-512 (elsewhere oneDNN keeps these products).
  if (!cpu_runs_v4_variants() || !cpu_is_amd()) return;
  r.add("matmul", candidate<RowsF32Kernel>("cpu_matmul_f32", decline));
  r.add("fused_matmul", candidate<RowsF32Kernel>("cpu_matmul_f32", decline));
  r.add("matmul", candidate<WeightGradF32Kernel>("cpu_weight_grad_f32", decline_weight_grad));
}

}  // namespace tern::cpu

TERN_CPU_V3_END
