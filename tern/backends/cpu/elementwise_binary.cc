// Vectorized binary kernels: add, sub, mul, div, maximum, minimum on f32/bf16/f16 and where on
// every dtype. The broadcast is planned once per node as a 2-D view (same shape, scalar, row,
// column; other patterns decline) and each row piece runs a loop specialized on which operands
// advance; 16-bit floats compute in float blocks.
#include <cstring>
#include <memory>

#include "tern/backends/cpu/cpu_isa.h"
#include "tern/backends/cpu/cpu_kernels.h"
#include "tern/backends/cpu/elementwise_kernels.h"
#include "tern/backends/cpu/elementwise_loops.h"

TERN_CPU_V3_BEGIN  // the code below is x86-64-v3 (cpu_isa.h)

namespace tern::cpu {
namespace {

struct AddOp {
  float operator()(float a, float b) const { return a + b; }
};
struct SubOp {
  float operator()(float a, float b) const { return a - b; }
};
struct MulOp {
  float operator()(float a, float b) const { return a * b; }
};
struct DivOp {
  float operator()(float a, float b) const { return a / b; }
};
// NaN in either operand gives NaN; ties return a (as the reference does).
struct MaximumOp {
  float operator()(float a, float b) const { return a != a ? a : (b != b ? b : (a < b ? b : a)); }
};
struct MinimumOp {
  float operator()(float a, float b) const { return a != a ? a : (b != b ? b : (b < a ? b : a)); }
};

// c[i] = f(a[i or 0], b[i or 0]); the broadcast operand is read once before the loop.
template <bool kStepA, bool kStepB, typename F>
void binary_loop(const float* a, const float* b, float* c, int64_t n, F f) {
  if constexpr (kStepA && kStepB) {
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) c[i] = f(a[i], b[i]);
  } else if constexpr (kStepA) {
    const float bv = b[0];
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) c[i] = f(a[i], bv);
  } else if constexpr (kStepB) {
    const float av = a[0];
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) c[i] = f(av, b[i]);
  } else {
    const float v = f(a[0], b[0]);
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) c[i] = v;
  }
}

template <typename F>
void binary_piece(const float* a, bool step_a, const float* b, bool step_b, float* c, int64_t n,
                  F f) {
  if (step_a && step_b) {
    binary_loop<true, true>(a, b, c, n, f);
  } else if (step_a) {
    binary_loop<true, false>(a, b, c, n, f);
  } else if (step_b) {
    binary_loop<false, true>(a, b, c, n, f);
  } else {
    binary_loop<false, false>(a, b, c, n, f);
  }
}

// 16-bit floats: convert a block of each stepping operand to float, compute, round back.
template <typename H, typename F>
void binary_piece(const H* a, bool step_a, const H* b, bool step_b, H* c, int64_t n, F f) {
  float fa[kConvertBlock], fb[kConvertBlock], fc[kConvertBlock];
  if (!step_a) fa[0] = static_cast<float>(a[0]);
  if (!step_b) fb[0] = static_cast<float>(b[0]);
  for (int64_t s = 0; s < n; s += kConvertBlock) {
    int64_t m = std::min(kConvertBlock, n - s);
    if (step_a) to_float(a + s, fa, m);
    if (step_b) to_float(b + s, fb, m);
    binary_piece(fa, step_a, fb, step_b, fc, m, f);
    from_float(fc, c + s, m);
  }
}

template <typename F>
class BinaryKernel final : public kernels::Kernel {
 public:
  explicit BinaryKernel(BroadcastPlan plan) : plan_(std::move(plan)) {}

  void run(kernels::KernelContext& ctx) override {
    switch (ctx.outputs[0].dtype()) {
      case DType::kF32:
        return run_typed<float>(ctx);
      case DType::kBF16:
        return run_typed<bfloat16>(ctx);
      case DType::kF16:
        return run_typed<float16>(ctx);
      default:
        throw_error(ErrorCode::kInternal, "vectorized binary kernel got dtype ",
                    dtype_name(ctx.outputs[0].dtype()));
    }
  }

 private:
  template <typename T>
  void run_typed(kernels::KernelContext& ctx) const {
    const T* a = ctx.inputs[0].data<T>();
    const T* b = ctx.inputs[1].data<T>();
    T* c = ctx.outputs[0].data<T>();
    bool step_a = plan_.operands[0].contiguous, step_b = plan_.operands[1].contiguous;
    parallel_ranges(ctx.outputs[0].num_elements(), [&](int64_t begin, int64_t end) {
      for_each_segment(plan_, begin, end, [&](int64_t row, int64_t col, int64_t n, int64_t pos) {
        binary_piece(segment_start(plan_, 0, a, row, col), step_a,
                     segment_start(plan_, 1, b, row, col), step_b, c + pos, n, F{});
      });
    });
  }

  BroadcastPlan plan_;
};

// --- where ---

// The value where copies: the bits of a 16-bit float (a struct copy would keep the loop scalar).
template <typename T>
auto raw(const T& v) {
  if constexpr (std::is_same_v<T, bfloat16> || std::is_same_v<T, float16>) {
    return v.bits;
  } else {
    return v;
  }
}
template <typename T, typename V>
void set_raw(T& dst, V v) {
  if constexpr (std::is_same_v<T, bfloat16> || std::is_same_v<T, float16>) {
    dst.bits = v;
  } else {
    dst = v;
  }
}

// c[i] = cond[i] ? a[i or 0] : b[i or 0].
template <bool kStepA, bool kStepB, typename T>
void where_loop(const uint8_t* cond, const T* a, const T* b, T* c, int64_t n) {
  const auto av = raw(a[0]), bv = raw(b[0]);
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) {
    auto x = kStepA ? raw(a[i]) : av;
    auto y = kStepB ? raw(b[i]) : bv;
    set_raw(c[i], cond[i] ? x : y);
  }
}

template <typename T>
void where_piece(const uint8_t* cond, bool step_cond, const T* a, bool step_a, const T* b,
                 bool step_b, T* c, int64_t n) {
  if (!step_cond) {  // one condition for the whole piece: a copy of a or of b
    const T* src = cond[0] ? a : b;
    if (cond[0] ? step_a : step_b) {
      if (c != src) std::memcpy(c, src, static_cast<size_t>(n) * sizeof(T));
    } else {
      const auto v = raw(src[0]);
#pragma omp simd
      for (int64_t i = 0; i < n; ++i) set_raw(c[i], v);
    }
  } else if (step_a && step_b) {
    where_loop<true, true>(cond, a, b, c, n);
  } else if (step_a) {
    where_loop<true, false>(cond, a, b, c, n);
  } else if (step_b) {
    where_loop<false, true>(cond, a, b, c, n);
  } else {
    where_loop<false, false>(cond, a, b, c, n);
  }
}

class WhereKernel final : public kernels::Kernel {
 public:
  explicit WhereKernel(BroadcastPlan plan) : plan_(std::move(plan)) {}

  void run(kernels::KernelContext& ctx) override {
    dispatch_dtype(ctx.outputs[0].dtype(), [&](auto tag) { run_typed<decltype(tag)>(ctx); });
  }

 private:
  template <typename T>
  void run_typed(kernels::KernelContext& ctx) const {
    // bool is stored as one byte holding 0 or 1.
    const uint8_t* cond = reinterpret_cast<const uint8_t*>(ctx.inputs[0].data<bool>());
    const T* a = ctx.inputs[1].data<T>();
    const T* b = ctx.inputs[2].data<T>();
    T* c = ctx.outputs[0].data<T>();
    const auto& ops = plan_.operands;
    parallel_ranges(ctx.outputs[0].num_elements(), [&](int64_t begin, int64_t end) {
      for_each_segment(plan_, begin, end, [&](int64_t row, int64_t col, int64_t n, int64_t pos) {
        where_piece(segment_start(plan_, 0, cond, row, col), ops[0].contiguous,
                    segment_start(plan_, 1, a, row, col), ops[1].contiguous,
                    segment_start(plan_, 2, b, row, col), ops[2].contiguous, c + pos, n);
      });
    });
  }

  BroadcastPlan plan_;
};

}  // namespace

void register_elementwise_binary_kernels(kernels::KernelRegistry& r) {
  const std::vector<DType> floats = {DType::kF32, DType::kBF16, DType::kF16};
  add_planned_kernel<BinaryKernel<AddOp>>(r, "add", floats);
  add_planned_kernel<BinaryKernel<SubOp>>(r, "sub", floats);
  add_planned_kernel<BinaryKernel<MulOp>>(r, "mul", floats);
  add_planned_kernel<BinaryKernel<DivOp>>(r, "div", floats);
  add_planned_kernel<BinaryKernel<MaximumOp>>(r, "maximum", floats);
  add_planned_kernel<BinaryKernel<MinimumOp>>(r, "minimum", floats);
  add_planned_kernel<WhereKernel>(r, "where",
                                  {DType::kF32, DType::kF64, DType::kBF16, DType::kF16, DType::kI8,
                                   DType::kU8, DType::kI32, DType::kI64, DType::kBool});
  register_elementwise_compare_kernels(r);
}

}  // namespace tern::cpu

TERN_CPU_V3_END
