// all_finite on the CPU for every float dtype: an element is Inf or NaN exactly when its exponent
// field is all ones, so each input is scanned as unsigned integers with an `omp simd` OR
// reduction of (bits & exponent_mask) == exponent_mask (no float compares, no early exit, the same
// instructions for f32, f64, bf16 and f16). Large inputs are split over the OpenMP threads; the
// answer does not depend on how.
#include <atomic>
#include <cstdint>
#include <cstring>

#include "tern/backends/cpu/cpu_isa.h"
#include "tern/backends/cpu/cpu_kernels.h"
#include "tern/backends/cpu/elementwise_loops.h"

TERN_CPU_V3_BEGIN  // the code below is x86-64-v3 (cpu_isa.h)

namespace tern::cpu {
namespace {

// 1 if any element of bits[0, n) has an all-ones exponent field.
template <typename U>
uint32_t any_non_finite(const unsigned char* bytes, int64_t n, U exponent_mask) {
  uint32_t bad = 0;
#pragma omp simd reduction(| : bad)
  for (int64_t i = 0; i < n; ++i) {
    U b;
    std::memcpy(&b, bytes + i * static_cast<int64_t>(sizeof(U)), sizeof(U));
    bad |= static_cast<uint32_t>((b & exponent_mask) == exponent_mask);
  }
  return bad;
}

template <typename U>
bool tensor_finite(const Tensor& t, U exponent_mask) {
  const auto* bytes = static_cast<const unsigned char*>(t.raw_data());
  std::atomic<uint32_t> bad{0};
  parallel_ranges(t.num_elements(), [&](int64_t begin, int64_t end) {
    uint32_t b = any_non_finite<U>(bytes + begin * static_cast<int64_t>(sizeof(U)), end - begin,
                                   exponent_mask);
    if (b) bad.store(1, std::memory_order_relaxed);
  });
  return bad.load() == 0;
}

bool finite(const Tensor& t) {
  switch (t.dtype()) {
    case DType::kF32:
      return tensor_finite<uint32_t>(t, 0x7f800000u);
    case DType::kF64:
      return tensor_finite<uint64_t>(t, 0x7ff0000000000000ull);
    case DType::kBF16:
      return tensor_finite<uint16_t>(t, static_cast<uint16_t>(0x7f80));
    case DType::kF16:
      return tensor_finite<uint16_t>(t, static_cast<uint16_t>(0x7c00));
    default:
      throw_error(ErrorCode::kInvalidArgument, "all_finite: unsupported dtype ",
                  dtype_name(t.dtype()));
  }
}

void all_finite_vec(kernels::KernelContext& ctx) {
  bool ok = true;
  for (const Tensor& t : ctx.inputs) {
    if (!ok) break;
    ok = finite(t);
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

TERN_CPU_V3_END
