// Vectorized fused_elementwise on f32/bf16/f16 (candidate "vec"): the vector formula of every
// opcode (kVectorTable, indexed like tern/ops/fused_program.cc's rows), and the kernel: the
// program runs over chunks
// of kChunk elements that stay in L1, one `omp simd` loop per instruction, so a chain of N ops
// reads its inputs and writes its output once instead of N times. Inputs broadcast through the
// 2-D view of elementwise_loops.h (same shape, scalar, row and column); others go to ref. With
// column_sum, rows of the output are summed per column while in L1 (run_with_column_sums). Math
// is the libm-free float math of elementwise_math.h (sin, cos and pow call libm per element).
#include <immintrin.h>

#include <cmath>

#include "tern/backends/cpu/cpu_isa.h"
#include "tern/backends/cpu/cpu_kernels.h"
#include "tern/backends/cpu/elementwise_loops.h"
#include "tern/backends/cpu/elementwise_math.h"
#include "tern/backends/cpu/vmath_v4.h"
#include "tern/ops/fused_program.h"

TERN_CPU_V3_BEGIN  // the code below is x86-64-v3 (cpu_isa.h)

namespace tern::cpu {
namespace {

using ops::FusedOpcode;

constexpr int64_t kChunk = 256;

// The vector loop of a unary / binary formula F, instantiated per row. `flatten` inlines F
// (GCC would call a formula out of line once two loops instantiate it: TERN_CPU_V4_LOOP).
template <auto F>
[[gnu::flatten]] void unary_loop(const float* a, const float*, float* y, int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) y[i] = F(a[i]);
}

template <auto F>
[[gnu::flatten]] void binary_loop(const float* a, const float* b, float* y, int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) y[i] = F(a[i], b[i]);
}

// The same loops compiled for AVX-512 (x86-64-v4, 16 floats per register), which the kernel
// runs where cpu_runs_v4_variants(): the transcendental formulas (exp, tanh, gelu and their
// gradients) are bound by arithmetic and run about twice as fast.
template <auto F>
TERN_CPU_V4_LOOP void unary_loop_v4(const float* a, const float*, float* y, int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) y[i] = F(a[i]);
}

template <auto F>
TERN_CPU_V4_LOOP void binary_loop_v4(const float* a, const float* b, float* y, int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) y[i] = F(a[i], b[i]);
}

// IEEE square roots by instruction (std::sqrt stays scalar for errno).
template <bool kReciprocal>
void sqrt_loop(const float* x, const float*, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256 r = _mm256_sqrt_ps(_mm256_loadu_ps(x + i));
    if (kReciprocal) r = _mm256_div_ps(_mm256_set1_ps(1.f), r);
    _mm256_storeu_ps(y + i, r);
  }
  for (; i < n; ++i) {
    __m128 r = _mm_sqrt_ss(_mm_set_ss(x[i]));
    if (kReciprocal) r = _mm_div_ss(_mm_set_ss(1.f), r);
    y[i] = _mm_cvtss_f32(r);
  }
}

void fill_once(const float*, const float*, float*, int64_t) {}  // kImm: filled at construction

// GELU's erf form and its gradient on AVX-512 written with intrinsics (vmath_v4.h).
TERN_CPU_V4_LOOP void gelu_erf_loop_v4(const float* a, const float*, float* y, int64_t n) {
  vmath_v4::gelu_erf_loop(a, y, n);
}
TERN_CPU_V4_LOOP void gelu_erf_grad_loop_v4(const float* dy, const float* x, float* y, int64_t n) {
  vmath_v4::gelu_erf_grad_loop(dy, x, y, n);
}

namespace vm = vmath;

// The vector formula of every opcode (the scalar ones are the rows of tern/ops/fused_program.cc;
// the two agree within the tolerances of tests/consistency). Indexed through vector_fn().
struct VectorRow {
  FusedOpcode code;
  FusedVectorFn fn;
  FusedVectorFn fn_v4;  // the AVX-512 build of fn (fn itself where there is none)
};

template <auto F>
constexpr VectorRow unary_row(FusedOpcode code) {
  return {code, &unary_loop<F>, &unary_loop_v4<F>};
}

template <auto F>
constexpr VectorRow binary_row(FusedOpcode code) {
  return {code, &binary_loop<F>, &binary_loop_v4<F>};
}
// clang-format off
constexpr VectorRow kVectorTable[] = {
    {FusedOpcode::kImm, &fill_once, &fill_once},
    unary_row<[](float x) { return -x; }>(FusedOpcode::kNeg),
    unary_row<[](float x) { return vm::abs(x); }>(FusedOpcode::kAbs),
    unary_row<[](float x) { return vm::exp(x); }>(FusedOpcode::kExp),
    unary_row<[](float x) { return vm::log(x); }>(FusedOpcode::kLog),
    unary_row<[](float x) { return vm::log1p(x); }>(FusedOpcode::kLog1p),
    {FusedOpcode::kSqrt, &sqrt_loop<false>, &sqrt_loop<false>},
    {FusedOpcode::kRsqrt, &sqrt_loop<true>, &sqrt_loop<true>},
    unary_row<[](float x) { return x * x; }>(FusedOpcode::kSquare),
    unary_row<[](float x) { return vm::tanh(x); }>(FusedOpcode::kTanh),
    unary_row<[](float x) { return vm::sigmoid(x); }>(FusedOpcode::kSigmoid),
    unary_row<[](float x) { return x < 0.f ? 0.f : x; }>(FusedOpcode::kRelu),
    unary_row<[](float x) {
       return vm::select(x > 0.f, x, 0.f) + vm::log1p(vm::exp(-vm::abs(x)));
     }>(FusedOpcode::kSoftplus),
    unary_row<[](float x) { return std::sin(x); }>(FusedOpcode::kSin),
    unary_row<[](float x) { return std::cos(x); }>(FusedOpcode::kCos),
    unary_row<[](float x) {
       return (x > 0.f) ? 1.f : (x < 0.f ? -1.f : (x == x ? 0.f : x));
     }>(FusedOpcode::kSign),
    unary_row<[](float x) { return vm::gelu_tanh(x); }>(FusedOpcode::kGeluTanh),
    {FusedOpcode::kGeluErf, &unary_loop<[](float x) { return vm::gelu_erf(x); }>,
     &gelu_erf_loop_v4},
    unary_row<[](float x) { return bfloat16::round(x); }>(FusedOpcode::kRoundBF16),
    binary_row<[](float p, float q) { return p + q; }>(FusedOpcode::kAdd),
    binary_row<[](float p, float q) { return p - q; }>(FusedOpcode::kSub),
    binary_row<[](float p, float q) { return p * q; }>(FusedOpcode::kMul),
    binary_row<[](float p, float q) { return p / q; }>(FusedOpcode::kDiv),
    binary_row<[](float p, float q) { return std::pow(p, q); }>(FusedOpcode::kPow),
    binary_row<[](float p, float q) { return vm::maximum(p, q); }>(FusedOpcode::kMaximum),
    binary_row<[](float p, float q) {
       return vm::select(p != p, p, vm::select(q != q, q, vm::select(q < p, q, p)));
     }>(FusedOpcode::kMinimum),
    binary_row<[](float dy, float x) { return (x > 0.f) ? dy : 0.f; }>(FusedOpcode::kReluGrad),
    binary_row<[](float dy, float s) { return dy * s * (1.f - s); }>(FusedOpcode::kSigmoidGrad),
    binary_row<[](float dy, float t) { return dy * (1.f - t * t); }>(FusedOpcode::kTanhGrad),
    binary_row<[](float dy, float x) { return dy * vm::gelu_tanh_derivative(x); }>(
        FusedOpcode::kGeluTanhGrad),
    {FusedOpcode::kGeluErfGrad,
     &binary_loop<[](float dy, float x) { return dy * vm::gelu_erf_derivative(x); }>,
     &gelu_erf_grad_loop_v4},
};
// clang-format on

}  // namespace

FusedVectorFn fused_vector_fn(FusedOpcode op) {
  static const std::vector<FusedVectorFn> by_code = [] {
    bool v4 = cpu_runs_v4_variants();
    std::vector<FusedVectorFn> index;
    for (const VectorRow& row : kVectorTable) {
      size_t c = static_cast<size_t>(row.code);
      if (index.size() <= c) index.resize(c + 1, nullptr);
      index[c] = v4 ? row.fn_v4 : row.fn;
    }
    return index;
  }();
  size_t c = static_cast<size_t>(op);
  return c < by_code.size() ? by_code[c] : nullptr;
}

namespace {

// Rows of y per task of a column-sum run: each task sums its rows' columns into its own partial
// row; the partials are added in task order, so the sums do not depend on the thread count.
constexpr int64_t kSumRows = 256;

class FusedElementwiseKernel final : public kernels::Kernel {
 public:
  FusedElementwiseKernel(ops::FusedProgram program, BroadcastPlan plan, bool column_sum)
      : program_(std::move(program)), plan_(std::move(plan)), column_sum_(column_sum) {
    // Each instruction's vector loop, looked up once.
    for (const ops::FusedInstruction& ins : program_.code) fns_.push_back(fused_vector_fn(ins.op));
    // Immediates are constant over every chunk: fill their slots once.
    for (size_t k = 0; k < program_.code.size(); ++k) {
      if (program_.code[k].op != FusedOpcode::kImm) continue;
      immediates_.emplace_back(
          program_.num_inputs + static_cast<int>(k),
          std::vector<float>(kChunk, static_cast<float>(program_.code[k].imm)));
    }
  }

  void run(kernels::KernelContext& ctx) override {
    switch (ctx.outputs[0].dtype()) {
      case DType::kF32:
        return run_typed<float>(ctx);
      case DType::kBF16:
        return run_typed<bfloat16>(ctx);
      case DType::kF16:
        return run_typed<float16>(ctx);
      default:
        throw_error(ErrorCode::kInternal, "vec fused_elementwise got dtype ",
                    dtype_name(ctx.outputs[0].dtype()));
    }
  }

 private:
  template <typename T>
  void run_typed(kernels::KernelContext& ctx) {
    std::vector<const T*> in;
    for (const Tensor& t : ctx.inputs) in.push_back(t.data<T>());
    T* out = ctx.outputs[0].data<T>();
    if (column_sum_) return run_with_column_sums(ctx, in, out);
    parallel_ranges(ctx.outputs[0].num_elements(), [&](int64_t begin, int64_t end) {
      run_range(in, out, begin, end, [](int64_t, const T*, int64_t) {});
    });
  }

  // Evaluates the program for y's elements [begin, end); `written(pos, dst, m)` sees each chunk
  // of m values once stored at dst = out + pos.
  template <typename T, typename Written>
  void run_range(const std::vector<const T*>& in, T* out, int64_t begin, int64_t end,
                 Written&& written) const {
    thread_local std::vector<float> scratch;
    size_t slots = static_cast<size_t>(program_.num_slots());
    if (scratch.size() < slots * kChunk) scratch.resize(slots * kChunk);
    std::vector<const float*> src(slots, nullptr);
    for (const auto& [slot, values] : immediates_) src[static_cast<size_t>(slot)] = values.data();
    for_each_segment(plan_, begin, end, [&](int64_t row, int64_t col, int64_t length, int64_t pos) {
      for (int64_t s = 0; s < length; s += kChunk) {
        int64_t m = std::min(kChunk, length - s);
        load_inputs(in, row, col + s, m, scratch.data(), src);
        T* dst = out + pos + s;
        run_program(scratch.data(), src, m, dst);
        written(pos + s, dst, m);
      }
    });
  }

  // column_sum: y in tasks of kSumRows rows (of y's last dim), each adding its stored values into
  // its own partial row in f32 while they are in L1; then the partials in task order.
  template <typename T>
  void run_with_column_sums(kernels::KernelContext& ctx, const std::vector<const T*>& in, T* out) {
    Tensor& sums = ctx.outputs[1];
    const int64_t n = sums.num_elements();
    const int64_t rows = n > 0 ? ctx.outputs[0].num_elements() / n : 0;
    const int64_t tasks = (rows + kSumRows - 1) / kSumRows;
    partials_.assign(static_cast<size_t>(std::max<int64_t>(tasks, 1) * n), 0.f);
#pragma omp parallel for schedule(static) if (rows * n > kParallelThreshold)
    for (int64_t t = 0; t < tasks; ++t) {
      float* partial = partials_.data() + t * n;
      const int64_t r0 = t * kSumRows, r1 = std::min(rows, r0 + kSumRows);
      float stored[kChunk];
      run_range(in, out, r0 * n, r1 * n, [&](int64_t pos, const T* dst, int64_t m) {
        const float* v = reinterpret_cast<const float*>(dst);
        if constexpr (!std::is_same_v<T, float>) {
          to_float(dst, stored, m);  // the rounded values y holds
          v = stored;
        }
        for (int64_t done = 0; done < m;) {  // a chunk may wrap past a row's end
          const int64_t col = (pos + done) % n, k = std::min(m - done, n - col);
          add_into(partial + col, v + done, k);
          done += k;
        }
      });
    }
    for (int64_t t = 1; t < tasks; ++t) add_into(partials_.data(), partials_.data() + t * n, n);
    if constexpr (!std::is_same_v<T, float>) {
      if (sums.dtype() == ctx.outputs[0].dtype())
        return from_float(partials_.data(), sums.data<T>(), n);
    }
    std::copy(partials_.begin(), partials_.begin() + n, sums.data<float>());
  }

  static void add_into(float* acc, const float* v, int64_t m) {
#pragma omp simd
    for (int64_t i = 0; i < m; ++i) acc[i] += v[i];
  }

  // Points the input slots at this chunk's values (f32 contiguous inputs in place, the rest
  // converted or broadcast into scratch).
  template <typename T>
  void load_inputs(const std::vector<const T*>& in, int64_t row, int64_t col, int64_t m,
                   float* scratch, std::vector<const float*>& src) const {
    for (size_t i = 0; i < in.size(); ++i) {
      const T* p = segment_start(plan_, i, in[i], row, col);
      float* buf = scratch + i * kChunk;
      if (!plan_.operands[i].contiguous) {
        float v = static_cast<float>(*p);
        std::fill(buf, buf + m, v);
        src[i] = buf;
      } else if constexpr (std::is_same_v<T, float>) {
        src[i] = p;
      } else {
        to_float(p, buf, m);
        src[i] = buf;
      }
    }
  }

  template <typename T>
  void run_program(float* scratch, std::vector<const float*>& src, int64_t m, T* dst) const {
    size_t base = static_cast<size_t>(program_.num_inputs);
    for (size_t k = 0; k < program_.code.size(); ++k) {
      const ops::FusedInstruction& ins = program_.code[k];
      if (ins.op == FusedOpcode::kImm) continue;
      bool last = k + 1 == program_.code.size();
      float* y = scratch + (base + k) * kChunk;
      if constexpr (std::is_same_v<T, float>) {
        if (last) y = dst;  // the final instruction writes the output directly
      }
      const float* a = src[static_cast<size_t>(ins.a)];
      const float* b = ins.b >= 0 ? src[static_cast<size_t>(ins.b)] : nullptr;
      fns_[k](a, b, y, m);
      src[base + k] = y;
    }
    const float* result = src.back();
    if constexpr (std::is_same_v<T, float>) {
      if (result != dst) std::copy(result, result + m, dst);  // a program ending in kImm
    } else {
      from_float(result, dst, m);
    }
  }

  ops::FusedProgram program_;
  std::vector<FusedVectorFn> fns_;
  BroadcastPlan plan_;
  std::vector<std::pair<int, std::vector<float>>> immediates_;
  bool column_sum_;
  std::vector<float> partials_;  // column_sum: [tasks, n] (one run at a time per node)
};

// "" if the kernel takes the signature, else why not.
std::string decline(const kernels::KernelSignature& sig, ops::FusedProgram* program,
                    BroadcastPlan* plan) {
  std::string problem =
      ops::decode_fused_program(*sig.attrs, static_cast<int>(sig.inputs.size()), program);
  if (!problem.empty()) return problem;
  std::vector<Shape> shapes;
  for (const TensorType& t : sig.inputs) shapes.push_back(t.shape);
  return plan_broadcast(shapes, sig.outputs[0].shape, plan);
}

}  // namespace

void register_fused_elementwise_kernels(kernels::KernelRegistry& r) {
  kernels::KernelCandidate c;
  c.name = "vec";
  c.dtypes = {DType::kF32, DType::kBF16, DType::kF16};
  c.priority = kVectorPriority;
  c.decline = [](const kernels::KernelSignature& sig) {
    ops::FusedProgram program;
    BroadcastPlan plan;
    return decline(sig, &program, &plan);
  };
  c.create = [](const kernels::KernelSignature& sig) -> std::unique_ptr<kernels::Kernel> {
    ops::FusedProgram program;
    BroadcastPlan plan;
    std::string why = decline(sig, &program, &plan);
    if (!why.empty()) throw_error(ErrorCode::kInternal, "vec ", sig.to_string(), ": ", why);
    return std::make_unique<FusedElementwiseKernel>(std::move(program), std::move(plan),
                                                    sig.attrs->get_bool("column_sum"));
  };
  r.add("fused_elementwise", std::move(c));
}

}  // namespace tern::cpu

TERN_CPU_V3_END
