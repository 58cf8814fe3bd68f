// bf16 matmuls on small_gemm_bf16's AVX512_BF16 tiles (vdpbf16ps, 6 x 64 tiles of C in
// registers), two kernels:
//
// cpu_weight_grad_bf16: C = a^T b (a [K, M], b [K, N] bf16, C f32; x^T dy). K is walked in blocks
// of kKBlock rows: the block's rows of a and of b paired two by two into the thread's buffers (the
// layout vdpbf16ps reads: one 32-bit word per pair of rows; pair_rows_bf16 prefetches the rows
// ahead), then C += the block's product. A small C (at most kDepthSplitBytes) is made by two
// threads over the two halves of K, the second half's sum added after (each row of a and b read
// once); a larger one is shared by columns (or rows, when M > N), each thread reading all of the
// other operand. oneDNN 2.6's brgemm copies the transposed `a` slowly from memory. Zen 5, 2
// threads, operands cold (kernel_ab_bench over 16 or 8 independent products in one graph,
// interleaved): W6's [4096, 256]^T [4096, 256] 0.82-0.86 -> 0.68-0.70 ms per product (0.58 hot on
// oneDNN), its FFN's [4096, 256]^T [4096, 1024] 2.83-2.90 -> 2.50-2.62 ms and [4096, 1024]^T
// [4096, 256] 2.80-2.83 -> 2.50-2.63; W1-bf16's [128, 784]^T [128, 1024] 0.29 -> 0.28,
// [128, 1024]^T [128, 1024] a tie (0.361 against 0.367). Halves of K against columns: for C of
// 256 KB 0.69 against 0.77 ms; for 1 MB (W6's FFN, in its step: `--profile`, 2 interleaved
// rounds) 22.6 / 23.4 against 20.5 / 20.9 ms per step for the 8 products.
//
// cpu_matmul_bf16: rows of C = a b or a b^T (+ a bias), a [M, K] with K even read in place as
// pairs, b packed once per call into pairs ([K / 2][N] words: b's rows paired, or b^T's words
// transposed), the rows of C in blocks of kRowBlock over the threads, the next block's rows of a
// prefetched; the bias added and bf16 results rounded as the tiles are stored. Taken from
// kMinRows rows, the size where it was measured ahead: in W6-bf16's step (a batch of 32 x 128
// tokens; `workloads_bench --profile`) oneDNN's products took 2.53-2.72 ms (FFN) and 0.66-0.83 ms
// (attention's projections, forward and input gradients), these tiles 2.24-2.30 and 0.55-0.58
// ms; the step 130.3 / 133.8 / 134.7 -> 121.1 / 124.0 / 124.9 ms (3 interleaved rounds). Alone,
// with its operands in cache, oneDNN is 3-8% ahead at 1024-4096 rows (4096 x 256 x 256: 0.548
// against 0.567 ms) and far ahead on W1's 128 rows (b packed per call for few rows: 0.22 against
// 0.34 ms for [128, 784] x [784, 1024]): oneDNN keeps those.
//
// Both: AMD CPUs with AVX512_BF16 whose bf16 contractions are not widened (the rule of
// attention's bf16 products). Each element of C sums its K in the same order whatever the thread
// count.
#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <vector>

#include "tern/backends/cpu/cpu_backend.h"
#include "tern/backends/cpu/cpu_isa.h"
#include "tern/backends/cpu/cpu_kernels.h"
#include "tern/backends/cpu/depth_halves.h"
#include "tern/backends/cpu/onednn_common.h"
#include "tern/backends/cpu/small_gemm.h"
#include "tern/backends/cpu/weight_grad_bf16.h"
#include "tern/base/error.h"
#include "tern/base/strings.h"

TERN_CPU_V3_BEGIN

namespace tern::cpu {
namespace {

constexpr int64_t kKBlock = 512;   // rows of a and b paired per block (even)
constexpr int64_t kRowGroup = 24;  // rows of C per small_gemm call: 4 tiles share b's block
// C at most this big (bytes) is summed by the two threads over halves of K instead of shared
// between them (below).
constexpr int64_t kDepthSplitBytes = 512 << 10;

// The products this kernel serves: plain 2-D a^T b, bf16 operands, f32 result.
std::string decline(const kernels::KernelSignature& sig) {
  const ops::Attrs& attrs = *sig.attrs;
  if (!attrs.get_bool("transpose_a") || attrs.get_bool("transpose_b")) return "not a^T b";
  if (sig.inputs[0].dtype != DType::kBF16 || sig.inputs[1].dtype != DType::kBF16) {
    return "operands not bf16";
  }
  if (sig.outputs[0].dtype != DType::kF32) return "result not f32";
  const Shape &a = sig.inputs[0].shape, &b = sig.inputs[1].shape;
  if (a.rank() != 2 || b.rank() != 2) return "operands not 2-D";
  if (a[0] == 0 || a[1] == 0 || b[1] == 0) return "empty";
  return "";
}

// C[0:mt, 0:nt] (row stride n) = rows [k_begin, k_end) of a[:, 0:mt]^T b[:, 0:nt] (row strides
// m, n), in blocks of kKBlock rows.
void product(int64_t m, int64_t n, const bfloat16* a, const bfloat16* b, float* c, int64_t k_begin,
             int64_t k_end, int64_t mt, int64_t nt) {
  thread_local std::vector<uint32_t> ap, bp;
  const int64_t pairs = (std::min(kKBlock, k_end - k_begin) + 1) / 2;
  ap.resize(static_cast<size_t>(pairs * mt));
  bp.resize(static_cast<size_t>(pairs * nt));
  for (int64_t k0 = k_begin; k0 < k_end; k0 += kKBlock) {
    const int64_t rows = std::min(kKBlock, k_end - k0), kp = (rows + 1) / 2;
    pair_rows_bf16(rows, mt, a + k0 * m, m, ap.data(), mt);
    pair_rows_bf16(rows, nt, b + k0 * n, n, bp.data(), nt);
    for (int64_t i = 0; i < mt; i += kRowGroup) {
      const int64_t rows_c = std::min(kRowGroup, mt - i);
      if (k0 == k_begin) {
        small_gemm_bf16(true, rows_c, nt, kp, 1.0f, ap.data() + i, mt, bp.data(), nt, c + i * n, n);
      } else {
        small_gemm_bf16_acc(rows_c, nt, kp, ap.data() + i, mt, bp.data(), nt, c + i * n, n);
      }
    }
  }
}

// C = (rows [0, half) of the product) + (rows [half, K)) (depth_halves.h): two threads read each
// row of a and b once.
void by_depth(int64_t k, int64_t m, int64_t n, const bfloat16* a, const bfloat16* b, float* c) {
  const int64_t half = (k / 2 + 1) / 2 * 2;
  sum_depth_halves(k, half, m * n, c, [&](int64_t k0, int64_t k1, float* dst) {
    product(m, n, a, b, dst, k0, k1, m, n);
  });
}

class WeightGradBf16Kernel final : public kernels::Kernel {
 public:
  explicit WeightGradBf16Kernel(const kernels::KernelSignature& sig)
      : k_(sig.inputs[0].shape[0]), m_(sig.inputs[0].shape[1]), n_(sig.inputs[1].shape[1]) {}

  void run(kernels::KernelContext& ctx) override {
    weight_grad_bf16(k_, m_, n_, ctx.inputs[0].data<bfloat16>(), ctx.inputs[1].data<bfloat16>(),
                     ctx.outputs[0].data<float>());
  }

 private:
  int64_t k_, m_, n_;
};

// --- Rows of bf16 products: C = a b or a b^T (+ bias), a [M, K] read in place ---

constexpr int64_t kRowBlock = 48;  // rows of C per small_gemm_bf16_bias call
constexpr int64_t kMinRows = 4096;

// The products this kernel serves: 2-D a b or a b^T with bf16 operands, an even K (a's rows are
// pairs in place), at least kMinRows rows; fused: a bias only.
std::string decline_rows(const kernels::KernelSignature& sig) {
  const ops::Attrs& attrs = *sig.attrs;
  if (attrs.get_bool("transpose_a")) return "a transposed";
  if (sig.inputs[0].dtype != DType::kBF16 || sig.inputs[1].dtype != DType::kBF16) {
    return "operands not bf16";
  }
  const Shape &a = sig.inputs[0].shape, &b = sig.inputs[1].shape;
  if (a.rank() != 2 || b.rank() != 2) return "operands not 2-D";
  if (a[1] % 2 != 0 || a[1] == 0) return "K odd or 0";
  if (a[0] < kMinRows) return str_cat("fewer than ", kMinRows, " rows");
  if (b.num_elements() == 0) return "empty";
  int bias = -1;
  if (std::string why = onednn::bias_only_epilogue(sig, &bias); !why.empty()) return why;
  if (bias >= 0 && sig.inputs[static_cast<size_t>(bias)].dtype != DType::kF32 &&
      sig.inputs[static_cast<size_t>(bias)].dtype != DType::kBF16) {
    return "a bias not f32 or bf16";
  }
  return "";
}

class RowsBf16Kernel final : public kernels::Kernel {
 public:
  explicit RowsBf16Kernel(const kernels::KernelSignature& sig)
      : m_(sig.inputs[0].shape[0]),
        k_(sig.inputs[0].shape[1]),
        transpose_b_(sig.attrs->get_bool("transpose_b")),
        n_(sig.inputs[1].shape[transpose_b_ ? 0 : 1]),
        out_dtype_(sig.outputs[0].dtype),
        bias_input_(sig.op->name == "fused_matmul" ? onednn::fused_epilogue(*sig.attrs).bias_input
                                                   : -1),
        bias_dtype_(bias_input_ >= 0 ? sig.inputs[static_cast<size_t>(bias_input_)].dtype
                                     : DType::kF32) {}

  void run(kernels::KernelContext& ctx) override {
    const auto* a = reinterpret_cast<const uint32_t*>(ctx.inputs[0].data<bfloat16>());
    const bfloat16* b = ctx.inputs[1].data<bfloat16>();
    const void* bias =
        bias_input_ >= 0 ? ctx.inputs[static_cast<size_t>(bias_input_)].raw_data() : nullptr;
    auto* c = static_cast<char*>(ctx.outputs[0].raw_data());
    const int64_t kp = k_ / 2, c_row_bytes = n_ * (out_dtype_ == DType::kF32 ? 4 : 2);
    thread_local std::vector<uint32_t> packed;  // the calling thread's: b's pairs, [kp][n]
    packed.resize(static_cast<size_t>(kp * n_));
    uint32_t* bp = packed.data();
    const int64_t blocks = (m_ + kRowBlock - 1) / kRowBlock;
#pragma omp parallel if (!omp_in_parallel())
    {
      const int threads = omp_get_num_threads(), t = omp_get_thread_num();
      if (transpose_b_) {  // b [n, k]: its rows' words transposed
        const int64_t j0 = n_ * t / threads, j1 = n_ * (t + 1) / threads;
        transpose_f32(j1 - j0, kp, reinterpret_cast<const float*>(b) + j0 * kp, kp,
                      reinterpret_cast<float*>(bp) + j0, n_);
      } else {  // b [k, n]: its rows paired
        const int64_t q0 = kp * t / threads, q1 = kp * (t + 1) / threads;
        pair_rows_bf16(2 * (q1 - q0), n_, b + 2 * q0 * n_, n_, bp + q0 * n_, n_);
      }
#pragma omp barrier
#pragma omp for schedule(static)
      for (int64_t block = 0; block < blocks; ++block) {
        const int64_t i = block * kRowBlock, rows = std::min(kRowBlock, m_ - i);
        if (block + 1 < blocks) {  // the next block's rows of a, into L2
          const int64_t next = std::min(kRowBlock, m_ - i - rows);
          const char* p = reinterpret_cast<const char*>(a + (i + rows) * kp);
          for (int64_t off = 0; off < next * kp * 4; off += 64) _mm_prefetch(p + off, _MM_HINT_T1);
        }
        small_gemm_bf16_bias(rows, n_, kp, a + i * kp, kp, bp, n_, c + i * c_row_bytes, out_dtype_,
                             n_, bias, bias_dtype_);
      }
    }
  }

 private:
  int64_t m_, k_;
  bool transpose_b_;
  int64_t n_;
  DType out_dtype_;
  int bias_input_;
  DType bias_dtype_;
};

// A candidate ahead of oneDNN's matmul where it applies.
template <typename K, typename Decline>
kernels::KernelCandidate candidate(std::string name, Decline decline) {
  kernels::KernelCandidate c;
  c.name = name;
  c.dtypes = {DType::kBF16};
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

void weight_grad_bf16(int64_t k, int64_t m, int64_t n, const bfloat16* a, const bfloat16* b,
                      float* c) {
  if (k >= 2 * kKBlock && m * n * 4 <= kDepthSplitBytes) {
    by_depth(k, m, n, a, b, c);
    return;
  }
#pragma omp parallel if (!omp_in_parallel())
  {
    const int threads = omp_get_num_threads(), t = omp_get_thread_num();
    // The larger side of C is cut: columns in multiples of 64 (a tile's width), rows of 6.
    const bool by_columns = n >= m;
    const int64_t side = by_columns ? n : m, unit = by_columns ? 64 : 6;
    const int64_t units = (side + unit - 1) / unit;
    const int64_t first = units * t / threads * unit;
    const int64_t last = std::min(side, units * (t + 1) / threads * unit);
    if (first < last) {
      const int64_t m0 = by_columns ? 0 : first, mt = by_columns ? m : last - first;
      const int64_t n0 = by_columns ? first : 0, nt = by_columns ? last - first : n;
      product(m, n, a + m0, b + n0, c + m0 * n + n0, 0, k, mt, nt);
    }
  }
}

void register_matmul_bf16_kernels(kernels::KernelRegistry& r) {
  if (!bf16_products_native()) return;
  r.add("matmul", candidate<WeightGradBf16Kernel>("cpu_weight_grad_bf16", decline));
  r.add("matmul", candidate<RowsBf16Kernel>("cpu_matmul_bf16", decline_rows));
  r.add("fused_matmul", candidate<RowsBf16Kernel>("cpu_matmul_bf16", decline_rows));
}

}  // namespace tern::cpu

TERN_CPU_V3_END
