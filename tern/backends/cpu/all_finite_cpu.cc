// all_finite on the CPU for every float dtype: each input scanned by has_non_finite (nan_guard.h:
// unsigned-integer exponent tests, no float compares, no early exit, the same instructions for
// f32, f64, bf16 and f16). Large inputs are split over the OpenMP threads; the answer does not
// depend on how. Baseline x86-64 code (the scan is memory-bound): registered on every CPU.
#include "tern/backends/cpu/cpu_kernels.h"
#include "tern/backends/cpu/nan_guard.h"

namespace tern::cpu {
namespace {

void all_finite_vec(kernels::KernelContext& ctx) {
  bool ok = true;
  for (const Tensor& t : ctx.inputs) {
    if (!ok) break;
    ok = !has_non_finite(t);
  }
  ctx.outputs[0].set(0, ok ? 1.0 : 0.0);
}

}  // namespace

void register_all_finite_kernels(kernels::KernelRegistry& r) {
  kernels::add_fn_kernel(r, "all_finite", "vec",
                         {DType::kF32, DType::kF64, DType::kBF16, DType::kF16}, kVectorPriority,
                         all_finite_vec);
}

}  // namespace tern::cpu
