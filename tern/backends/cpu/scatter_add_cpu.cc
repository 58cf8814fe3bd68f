// Fast scatter_add for f32 (an embedding's gradient: y = zeros(shape); y[indices[i]] +=
// updates[i], rows of `inner` elements). ref sorts the indices and sums each row in double; here
// the output is zeroed and the updates are added in index order, in f32, with the columns split
// into blocks over OpenMP threads. Every element is summed in the same order whatever the thread
// count, so the result is deterministic; it differs from ref by f32 rounding only.
#include <omp.h>
#include <algorithm>
#include <cstring>

#include "tern/backends/cpu/cpu_isa.h"
#include "tern/backends/cpu/cpu_kernels.h"
#include "tern/kernels/index_check.h"

TERN_CPU_V3_BEGIN  // the code below is x86-64-v3 (cpu_isa.h)

namespace tern::cpu {
namespace {

using kernels::KernelContext;

// Below this many updated elements one thread runs.
constexpr int64_t kParallelThreshold = 1 << 15;
// Columns per task: a block of every touched output row stays in L2 while the updates stream.
constexpr int64_t kColBlock = 64;

template <typename I>
void scatter_rows(const I* idx, int64_t n, const float* u, int64_t inner, float* y) {
  const int64_t blocks = (inner + kColBlock - 1) / kColBlock;
#pragma omp parallel for schedule(static) if (n * inner >= kParallelThreshold)
  for (int64_t b = 0; b < blocks; ++b) {
    const int64_t c0 = b * kColBlock, width = std::min(kColBlock, inner - c0);
    for (int64_t i = 0; i < n; ++i) {
      float* __restrict out = y + static_cast<int64_t>(idx[i]) * inner + c0;
      const float* __restrict in = u + i * inner + c0;
#pragma omp simd
      for (int64_t k = 0; k < width; ++k) out[k] += in[k];
    }
  }
}

class ScatterAddKernel final : public kernels::Kernel {
 public:
  void run(KernelContext& ctx) override {
    const Tensor& indices = ctx.inputs[0];
    const Tensor& updates = ctx.inputs[1];
    Tensor& y = ctx.outputs[0];
    const int64_t rows = y.shape()[0], n = indices.num_elements();
    const int64_t inner = rows == 0 ? 0 : y.num_elements() / rows;
    kernels::check_indices("scatter_add", indices, rows,
                           [&] { return str_cat("axis 0 of output shape ", y.shape()); });
    float* py = y.data<float>();
    const int64_t total = y.num_elements();
    const int64_t chunks = total >= kParallelThreshold ? 2 * omp_get_max_threads() : 1;
#pragma omp parallel for schedule(static) if (chunks > 1)
    for (int64_t c = 0; c < chunks; ++c) {
      const int64_t begin = total * c / chunks, end = total * (c + 1) / chunks;
      std::memset(py + begin, 0, static_cast<size_t>(end - begin) * sizeof(float));
    }
    if (n == 0 || inner == 0) return;
    if (indices.dtype() == DType::kI32) {
      scatter_rows(indices.data<int32_t>(), n, updates.data<float>(), inner, py);
    } else {
      scatter_rows(indices.data<int64_t>(), n, updates.data<float>(), inner, py);
    }
  }
};

}  // namespace

void register_scatter_add_kernels(kernels::KernelRegistry& r) {
  r.add("scatter_add",
        {.name = "cpu_vec",
         .dtypes = {DType::kF32},  // the updates' dtype (scatter_add's key input)
         .priority = kVectorPriority,
         .deterministic = true,
         .create = [](const kernels::KernelSignature&) -> std::unique_ptr<kernels::Kernel> {
           return std::make_unique<ScatterAddKernel>();
         }});
}

}  // namespace tern::cpu

TERN_CPU_V3_END
