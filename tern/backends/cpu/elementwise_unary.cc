// Vectorized unary kernels on f32/bf16/f16: neg abs square relu sign exp log log1p sqrt rsqrt
// tanh sigmoid softplus gelu, and the gradient helpers relu_grad gelu_grad sigmoid_grad
// tanh_grad. Each op is a float functor run in an `omp simd` loop (libm-free math from
// elementwise_math.h); 16-bit floats compute in float blocks. sin and cos stay on ref.
#include <immintrin.h>

#include <type_traits>

#include "tern/backends/cpu/cpu_isa.h"
#include "tern/backends/cpu/cpu_kernels.h"
#include "tern/backends/cpu/elementwise_kernels.h"
#include "tern/backends/cpu/elementwise_loops.h"
#include "tern/backends/cpu/elementwise_math.h"
#include "tern/backends/cpu/vmath_v4.h"

TERN_CPU_V3_BEGIN  // the code below is x86-64-v3 (cpu_isa.h)

namespace tern::cpu {
namespace {

// --- the functions ---

struct NegOp {
  float operator()(float x) const { return -x; }
};
struct AbsOp {
  float operator()(float x) const { return vmath::abs(x); }
};
struct SquareOp {
  float operator()(float x) const { return x * x; }
};
struct ReluOp {
  float operator()(float x) const { return x < 0.f ? 0.f : x; }  // NaN stays NaN
};
struct SignOp {
  float operator()(float x) const { return x > 0.f ? 1.f : (x < 0.f ? -1.f : (x == x ? 0.f : x)); }
};
struct ExpOp {
  float operator()(float x) const { return vmath::exp(x); }
};
struct LogOp {
  float operator()(float x) const { return vmath::log(x); }
};
struct Log1pOp {
  float operator()(float x) const { return vmath::log1p(x); }
};
struct TanhOp {
  float operator()(float x) const { return vmath::tanh(x); }
};
struct SigmoidOp {
  float operator()(float x) const { return vmath::sigmoid(x); }
};
struct SoftplusOp {
  float operator()(float x) const {
    return vmath::select(x > 0.f, x, 0.f) + vmath::log1p(vmath::exp(-vmath::abs(x)));
  }
};
struct GeluErfOp {
  float operator()(float x) const { return vmath::gelu_erf(x); }
};
struct GeluTanhOp {
  float operator()(float x) const { return vmath::gelu_tanh(x); }
};

// Gradient helpers: f(dy, x) or f(dy, y).
struct ReluGradOp {
  float operator()(float dy, float x) const { return x > 0.f ? dy : 0.f; }
};
struct GeluErfGradOp {
  float operator()(float dy, float x) const { return dy * vmath::gelu_erf_derivative(x); }
};
struct GeluTanhGradOp {
  float operator()(float dy, float x) const { return dy * vmath::gelu_tanh_derivative(x); }
};
struct SigmoidGradOp {
  float operator()(float dy, float y) const { return dy * y * (1.f - y); }
};
struct TanhGradOp {
  float operator()(float dy, float y) const { return dy * (1.f - y * y); }
};

// --- float blocks ---

using UnaryBlock = void (*)(const float* x, float* y, int64_t n);
using PairBlockF32 = void (*)(const float* a, const float* b, float* out, int64_t n);
using PairBlockBF16 = void (*)(const bfloat16* a, const bfloat16* b, bfloat16* out, int64_t n);

// A gradient helper's loops: on floats, and (AVX-512 builds) on bf16 read and written in place;
// without the latter, 16-bit tensors go through float blocks.
struct PairBlock {
  PairBlockF32 f32;
  PairBlockBF16 bf16 = nullptr;
};

template <typename F>
[[gnu::flatten]] void unary_block(const float* x, float* y, int64_t n) {
  const F f;
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) y[i] = f(x[i]);
}

template <typename F>
[[gnu::flatten]] void pair_block(const float* a, const float* b, float* out, int64_t n) {
  const F f;
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) out[i] = f(a[i], b[i]);
}

// The same two loops compiled for AVX-512 (x86-64-v4, 16 floats per register): the
// transcendental functions are bound by arithmetic, not memory, and run about twice as fast.
// unary_block_for / pair_block_for pick them where cpu_runs_v4_variants().
template <typename F>
TERN_CPU_V4_LOOP void unary_block_v4(const float* x, float* y, int64_t n) {
  const F f;
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) y[i] = f(x[i]);
}

template <typename F>
TERN_CPU_V4_LOOP void pair_block_v4(const float* a, const float* b, float* out, int64_t n) {
  const F f;
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) out[i] = f(a[i], b[i]);
}

// The gradient helpers' AVX-512 loop on bf16 tensors: each value widened, computed and rounded
// in registers, where the float-block path passes every block through L1 three more times. bf16
// [4M] on 2 Zen 5 cores (kernel_ab_bench): relu_grad 0.32-0.38 -> 0.22-0.29 ms, sigmoid_grad 0.49
// -> 0.22, tanh_grad 0.31 -> 0.22, gelu_grad 1.10 -> 1.02-1.04. The unary ops keep the blocks:
// there GCC's 32-lane loop over 16-bit values measured slower (exp 0.54 -> 0.66, sigmoid 0.71 ->
// 0.82, tanh 0.82 -> 0.90, gelu 0.98 -> 1.02 ms).
template <typename F>
TERN_CPU_V4_LOOP void pair_block_bf16_v4(const bfloat16* a, const bfloat16* b, bfloat16* out,
                                         int64_t n) {
  const F f;
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) {
    out[i].bits =
        float_to_bf16_bits(f(bf16_bits_to_float(a[i].bits), bf16_bits_to_float(b[i].bits)));
  }
}

// GELU's erf form on AVX-512 written with intrinsics (vmath_v4.h: ~25% faster than GCC's loops of
// the portable formula above).
TERN_CPU_V4_LOOP void gelu_erf_block_v4(const float* x, float* y, int64_t n) {
  vmath_v4::gelu_erf_loop(x, y, n);
}
TERN_CPU_V4_LOOP void gelu_erf_grad_block_v4(const float* dy, const float* x, float* out,
                                             int64_t n) {
  vmath_v4::gelu_erf_grad_loop(dy, x, out, n);
}
template <typename F>
UnaryBlock unary_block_for() {
  if (!cpu_runs_v4_variants()) return &unary_block<F>;
  if constexpr (std::is_same_v<F, GeluErfOp>) return &gelu_erf_block_v4;
  return &unary_block_v4<F>;
}

template <typename F>
PairBlock pair_block_for() {
  if (!cpu_runs_v4_variants()) return {&pair_block<F>};
  // bf16 through float blocks: the loop above measured 0.90 ms on bf16 [4M] (2 threads) that
  // way, 0.96 with the values widened and rounded in its registers (pair_block_bf16_v4's way).
  if constexpr (std::is_same_v<F, GeluErfGradOp>) return {&gelu_erf_grad_block_v4, nullptr};
  return {&pair_block_v4<F>, &pair_block_bf16_v4<F>};
}

// IEEE square roots (GCC keeps std::sqrt scalar for errno, so these use the instruction).
template <bool kReciprocal>
void sqrt_block(const float* x, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256 r = _mm256_sqrt_ps(_mm256_loadu_ps(x + i));
    if constexpr (kReciprocal) r = _mm256_div_ps(_mm256_set1_ps(1.f), r);
    _mm256_storeu_ps(y + i, r);
  }
  for (; i < n; ++i) {
    __m128 r = _mm_sqrt_ss(_mm_set_ss(x[i]));
    if constexpr (kReciprocal) r = _mm_div_ss(_mm_set_ss(1.f), r);
    y[i] = _mm_cvtss_f32(r);
  }
}

// --- running a block function over a tensor ---

template <typename T>
void unary_piece(UnaryBlock block, const T* x, T* y, int64_t n) {
  if constexpr (std::is_same_v<T, float>) {
    block(x, y, n);
  } else {
    float fx[kConvertBlock];
    for (int64_t s = 0; s < n; s += kConvertBlock) {
      int64_t m = std::min(kConvertBlock, n - s);
      to_float(x + s, fx, m);
      block(fx, fx, m);
      from_float(fx, y + s, m);
    }
  }
}

template <typename T>
void pair_piece(PairBlock block, const T* a, const T* b, T* out, int64_t n) {
  if constexpr (std::is_same_v<T, float>) {
    block.f32(a, b, out, n);
  } else {
    if constexpr (std::is_same_v<T, bfloat16>) {
      if (block.bf16) return block.bf16(a, b, out, n);
    }
    float fa[kConvertBlock], fb[kConvertBlock];
    for (int64_t s = 0; s < n; s += kConvertBlock) {
      int64_t m = std::min(kConvertBlock, n - s);
      to_float(a + s, fa, m);
      to_float(b + s, fb, m);
      block.f32(fa, fb, fa, m);
      from_float(fa, out + s, m);
    }
  }
}

// Calls fn(T{}) for the dtypes these kernels take.
template <typename Fn>
void dispatch_vec_float(DType dtype, Fn&& fn) {
  switch (dtype) {
    case DType::kF32:
      return fn(float{});
    case DType::kBF16:
      return fn(bfloat16{});
    case DType::kF16:
      return fn(float16{});
    default:
      throw_error(ErrorCode::kInternal, "vectorized unary kernel got dtype ", dtype_name(dtype));
  }
}

void run_unary(kernels::KernelContext& ctx, UnaryBlock block) {
  dispatch_vec_float(ctx.inputs[0].dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* x = ctx.inputs[0].data<T>();
    T* y = ctx.outputs[0].data<T>();
    parallel_ranges(ctx.inputs[0].num_elements(), [&](int64_t begin, int64_t end) {
      unary_piece(block, x + begin, y + begin, end - begin);
    });
  });
}

void run_pair(kernels::KernelContext& ctx, PairBlock block) {
  dispatch_vec_float(ctx.inputs[0].dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* a = ctx.inputs[0].data<T>();
    const T* b = ctx.inputs[1].data<T>();
    T* out = ctx.outputs[0].data<T>();
    parallel_ranges(ctx.inputs[0].num_elements(), [&](int64_t begin, int64_t end) {
      pair_piece(block, a + begin, b + begin, out + begin, end - begin);
    });
  });
}

const std::vector<DType> kVecFloats = {DType::kF32, DType::kBF16, DType::kF16};

void add_unary(kernels::KernelRegistry& r, std::string_view op, UnaryBlock block) {
  kernels::add_fn_kernel(r, op, "vec", kVecFloats, kVectorPriority,
                         [block](kernels::KernelContext& ctx) { run_unary(ctx, block); });
}

void add_pair(kernels::KernelRegistry& r, std::string_view op, PairBlock block) {
  kernels::add_fn_kernel(r, op, "vec", kVecFloats, kVectorPriority,
                         [block](kernels::KernelContext& ctx) { run_pair(ctx, block); });
}

}  // namespace

void register_elementwise_unary_kernels(kernels::KernelRegistry& r) {
  add_unary(r, "neg", unary_block_for<NegOp>());
  add_unary(r, "abs", unary_block_for<AbsOp>());
  add_unary(r, "square", unary_block_for<SquareOp>());
  add_unary(r, "relu", unary_block_for<ReluOp>());
  add_unary(r, "sign", unary_block_for<SignOp>());
  add_unary(r, "exp", unary_block_for<ExpOp>());
  add_unary(r, "log", unary_block_for<LogOp>());
  add_unary(r, "log1p", unary_block_for<Log1pOp>());
  add_unary(r, "sqrt", sqrt_block<false>);
  add_unary(r, "rsqrt", sqrt_block<true>);
  add_unary(r, "tanh", unary_block_for<TanhOp>());
  add_unary(r, "sigmoid", unary_block_for<SigmoidOp>());
  add_unary(r, "softplus", unary_block_for<SoftplusOp>());
  kernels::add_fn_kernel(r, "gelu", "vec", kVecFloats, kVectorPriority,
                         [tanh = unary_block_for<GeluTanhOp>(),
                          erf = unary_block_for<GeluErfOp>()](kernels::KernelContext& ctx) {
                           run_unary(ctx, ctx.attrs.get_bool("approximate") ? tanh : erf);
                         });

  add_pair(r, "relu_grad", pair_block_for<ReluGradOp>());
  add_pair(r, "sigmoid_grad", pair_block_for<SigmoidGradOp>());
  add_pair(r, "tanh_grad", pair_block_for<TanhGradOp>());
  kernels::add_fn_kernel(r, "gelu_grad", "vec", kVecFloats, kVectorPriority,
                         [tanh = pair_block_for<GeluTanhGradOp>(),
                          erf = pair_block_for<GeluErfGradOp>()](kernels::KernelContext& ctx) {
                           run_pair(ctx, ctx.attrs.get_bool("approximate") ? tanh : erf);
                         });

  register_elementwise_cast_kernels(r);
}

}  // namespace tern::cpu

TERN_CPU_V3_END
