// NaN guards: scans as unsigned integers (an element is Inf or NaN exactly when its exponent field
// is all ones, NaN when its magnitude bits are above infinity's), with an `omp simd` OR reduction
// and no early exit; relu over f32 in place and over bf16 through float blocks.
#include "tern/backends/cpu/nan_guard.h"

#include <atomic>
#include <cstdint>
#include <cstring>

#include "tern/backends/cpu/elementwise_loops.h"

namespace tern::cpu {
namespace {

// Bit layout of one float dtype: U its integer, the magnitude mask (all but the sign) and the
// exponent mask (infinity's magnitude).
template <typename U>
struct FloatBits {
  U magnitude;
  U exponent;
};

// 1 if any of the n elements at `bytes` is non-finite (or, with kNaNOnly, NaN).
template <typename U, bool kNaNOnly>
uint32_t any_special(const unsigned char* bytes, int64_t n, FloatBits<U> f) {
  uint32_t found = 0;
#pragma omp simd reduction(| : found)
  for (int64_t i = 0; i < n; ++i) {
    U b;
    std::memcpy(&b, bytes + i * static_cast<int64_t>(sizeof(U)), sizeof(U));
    if constexpr (kNaNOnly) {
      found |= static_cast<uint32_t>(static_cast<U>(b & f.magnitude) > f.exponent);
    } else {
      found |= static_cast<uint32_t>(static_cast<U>(b & f.exponent) == f.exponent);
    }
  }
  return found;
}

template <typename U, bool kNaNOnly>
bool scan(const Tensor& t, FloatBits<U> f) {
  const auto* bytes = static_cast<const unsigned char*>(t.raw_data());
  std::atomic<uint32_t> found{0};
  parallel_ranges(t.num_elements(), [&](int64_t begin, int64_t end) {
    if (any_special<U, kNaNOnly>(bytes + begin * static_cast<int64_t>(sizeof(U)), end - begin, f)) {
      found.store(1, std::memory_order_relaxed);
    }
  });
  return found.load() != 0;
}

template <bool kNaNOnly>
bool scan_any(const Tensor& t) {
  switch (t.dtype()) {
    case DType::kF32:
      return scan<uint32_t, kNaNOnly>(t, {0x7fffffffu, 0x7f800000u});
    case DType::kF64:
      return scan<uint64_t, kNaNOnly>(t, {0x7fffffffffffffffull, 0x7ff0000000000000ull});
    case DType::kBF16:
      return scan<uint16_t, kNaNOnly>(t, {0x7fff, 0x7f80});
    case DType::kF16:
      return scan<uint16_t, kNaNOnly>(t, {0x7fff, 0x7c00});
    default:
      return false;
  }
}

void relu_block(float* x, int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) x[i] = x[i] < 0.f ? 0.f : x[i];  // NaN < 0 is false
}

}  // namespace

bool has_nan(const Tensor& t) {
  return scan_any<true>(t);
}

bool has_non_finite(const Tensor& t) {
  return scan_any<false>(t);
}

void relu_in_place(Tensor& t) {
  if (t.dtype() == DType::kF32) {
    float* x = t.data<float>();
    parallel_ranges(t.num_elements(),
                    [&](int64_t begin, int64_t end) { relu_block(x + begin, end - begin); });
    return;
  }
  if (t.dtype() != DType::kBF16) {
    throw_error(ErrorCode::kInternal, "relu_in_place: dtype ", dtype_name(t.dtype()));
  }
  bfloat16* x = t.data<bfloat16>();
  parallel_ranges(t.num_elements(), [&](int64_t begin, int64_t end) {
    float block[kConvertBlock];
    for (int64_t s = begin; s < end; s += kConvertBlock) {
      int64_t m = std::min(kConvertBlock, end - s);
      to_float(x + s, block, m);
      relu_block(block, m);
      from_float(block, x + s, m);
    }
  });
}

RefFallback::RefFallback(const kernels::KernelSignature& sig)
    : ref_(kernels::KernelRegistry::global().select(sig, "ref").kernel) {}

void RefFallback::run(kernels::KernelContext& ctx) {
  if (!ref_) throw_error(ErrorCode::kInternal, "RefFallback: no ref kernel");
  ref_->run(ctx);
}

}  // namespace tern::cpu
