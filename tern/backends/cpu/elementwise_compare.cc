// Vectorized comparisons (equal, not_equal, less, less_equal, greater, greater_equal) on every
// dtype, bool output, over the same 2-D broadcast plans as the arithmetic kernels; 16-bit floats
// are compared in float blocks (exact: widening keeps order and equality).
#include "tern/backends/cpu/cpu_isa.h"
#include "tern/backends/cpu/elementwise_kernels.h"
#include "tern/backends/cpu/elementwise_loops.h"

TERN_CPU_V3_BEGIN  // the code below is x86-64-v3 (cpu_isa.h)

namespace tern::cpu {
namespace {

struct EqualOp {
  template <typename T>
  bool operator()(T a, T b) const {
    return a == b;
  }
};
struct NotEqualOp {
  template <typename T>
  bool operator()(T a, T b) const {
    return a != b;
  }
};
struct LessOp {
  template <typename T>
  bool operator()(T a, T b) const {
    return a < b;
  }
};
struct LessEqualOp {
  template <typename T>
  bool operator()(T a, T b) const {
    return a <= b;
  }
};
struct GreaterOp {
  template <typename T>
  bool operator()(T a, T b) const {
    return a > b;
  }
};
struct GreaterEqualOp {
  template <typename T>
  bool operator()(T a, T b) const {
    return a >= b;
  }
};

// c[i] = f(a[i or 0], b[i or 0]) as 0/1 bytes.
template <bool kStepA, bool kStepB, typename T, typename F>
void compare_loop(const T* a, const T* b, uint8_t* c, int64_t n, F f) {
  const T av = a[0], bv = b[0];
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) {
    c[i] = static_cast<uint8_t>(f(kStepA ? a[i] : av, kStepB ? b[i] : bv));
  }
}

template <typename T, typename F>
void compare_piece(const T* a, bool step_a, const T* b, bool step_b, uint8_t* c, int64_t n, F f) {
  if constexpr (std::is_same_v<T, bfloat16> || std::is_same_v<T, float16>) {
    float fa[kConvertBlock], fb[kConvertBlock];
    if (!step_a) fa[0] = static_cast<float>(a[0]);
    if (!step_b) fb[0] = static_cast<float>(b[0]);
    for (int64_t s = 0; s < n; s += kConvertBlock) {
      int64_t m = std::min(kConvertBlock, n - s);
      if (step_a) to_float(a + s, fa, m);
      if (step_b) to_float(b + s, fb, m);
      compare_piece<float>(fa, step_a, fb, step_b, c + s, m, f);
    }
  } else if (step_a && step_b) {
    compare_loop<true, true>(a, b, c, n, f);
  } else if (step_a) {
    compare_loop<true, false>(a, b, c, n, f);
  } else if (step_b) {
    compare_loop<false, true>(a, b, c, n, f);
  } else {
    compare_loop<false, false>(a, b, c, n, f);
  }
}

template <typename F>
class CompareKernel final : public kernels::Kernel {
 public:
  explicit CompareKernel(BroadcastPlan plan) : plan_(std::move(plan)) {}

  void run(kernels::KernelContext& ctx) override {
    dispatch_dtype(ctx.inputs[0].dtype(), [&](auto tag) { run_typed<decltype(tag)>(ctx); });
  }

 private:
  template <typename T>
  void run_typed(kernels::KernelContext& ctx) const {
    const T* a = ctx.inputs[0].data<T>();
    const T* b = ctx.inputs[1].data<T>();
    // bool is stored as one byte holding 0 or 1.
    uint8_t* c = reinterpret_cast<uint8_t*>(ctx.outputs[0].data<bool>());
    bool step_a = plan_.operands[0].contiguous, step_b = plan_.operands[1].contiguous;
    parallel_ranges(ctx.outputs[0].num_elements(), [&](int64_t begin, int64_t end) {
      for_each_segment(plan_, begin, end, [&](int64_t row, int64_t col, int64_t n, int64_t pos) {
        compare_piece(segment_start(plan_, 0, a, row, col), step_a,
                      segment_start(plan_, 1, b, row, col), step_b, c + pos, n, F{});
      });
    });
  }

  BroadcastPlan plan_;
};

}  // namespace

void register_elementwise_compare_kernels(kernels::KernelRegistry& r) {
  const std::vector<DType> all(std::begin(kAllDTypes), std::end(kAllDTypes));
  add_planned_kernel<CompareKernel<EqualOp>>(r, "equal", all);
  add_planned_kernel<CompareKernel<NotEqualOp>>(r, "not_equal", all);
  add_planned_kernel<CompareKernel<LessOp>>(r, "less", all);
  add_planned_kernel<CompareKernel<LessEqualOp>>(r, "less_equal", all);
  add_planned_kernel<CompareKernel<GreaterOp>>(r, "greater", all);
  add_planned_kernel<CompareKernel<GreaterEqualOp>>(r, "greater_equal", all);
}

}  // namespace tern::cpu

TERN_CPU_V3_END
