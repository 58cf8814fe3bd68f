// Vectorized cast among f32, bf16 and f16 (the mixed-precision casts). Other dtype pairs
// decline to ref. Rounding is to nearest even, identical to the reference conversions.
#include <cstring>

#include "tern/backends/cpu/cpu_isa.h"
#include "tern/backends/cpu/cpu_kernels.h"
#include "tern/backends/cpu/elementwise_kernels.h"
#include "tern/backends/cpu/elementwise_loops.h"

TERN_CPU_V3_BEGIN  // the code below is x86-64-v3 (cpu_isa.h)

namespace tern::cpu {
namespace {

bool is_vec_float(DType d) {
  return d == DType::kF32 || d == DType::kBF16 || d == DType::kF16;
}

template <typename In, typename Out>
void cast_piece(const In* x, Out* y, int64_t n) {
  if constexpr (std::is_same_v<In, Out>) {
    if (static_cast<const void*>(y) != x) std::memcpy(y, x, static_cast<size_t>(n) * sizeof(In));
  } else if constexpr (std::is_same_v<In, float>) {
    from_float(x, y, n);
  } else if constexpr (std::is_same_v<Out, float>) {
    to_float(x, y, n);
  } else {  // bf16 <-> f16 through float, as the reference does
    float f[kConvertBlock];
    for (int64_t s = 0; s < n; s += kConvertBlock) {
      int64_t m = std::min(kConvertBlock, n - s);
      to_float(x + s, f, m);
      from_float(f, y + s, m);
    }
  }
}

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
      throw_error(ErrorCode::kInternal, "vectorized cast got dtype ", dtype_name(dtype));
  }
}

void cast_vec(kernels::KernelContext& ctx) {
  dispatch_vec_float(ctx.inputs[0].dtype(), [&](auto in_tag) {
    using In = decltype(in_tag);
    dispatch_vec_float(ctx.outputs[0].dtype(), [&](auto out_tag) {
      using Out = decltype(out_tag);
      const In* x = ctx.inputs[0].data<In>();
      Out* y = ctx.outputs[0].data<Out>();
      parallel_ranges(ctx.inputs[0].num_elements(), [&](int64_t begin, int64_t end) {
        cast_piece(x + begin, y + begin, end - begin);
      });
    });
  });
}

}  // namespace

void convert_bf16_f32(const void* in, DType from, void* out, DType to, int64_t n) {
  TERN_CHECK_ARG(
      (from == DType::kBF16 && to == DType::kF32) || (from == DType::kF32 && to == DType::kBF16),
      "convert_bf16_f32: ", dtype_name(from), " -> ", dtype_name(to));
  parallel_ranges(n, [&](int64_t begin, int64_t end) {
    if (from == DType::kBF16) {
      cast_piece(static_cast<const bfloat16*>(in) + begin, static_cast<float*>(out) + begin,
                 end - begin);
    } else {
      cast_piece(static_cast<const float*>(in) + begin, static_cast<bfloat16*>(out) + begin,
                 end - begin);
    }
  });
}

void register_elementwise_cast_kernels(kernels::KernelRegistry& r) {
  kernels::add_fn_kernel(r, "cast", "vec", {DType::kF32, DType::kBF16, DType::kF16},
                         kVectorPriority, cast_vec,
                         [](const kernels::KernelSignature& sig) -> std::string {
                           DType to = sig.outputs[0].dtype;
                           if (is_vec_float(to)) return "";
                           return str_cat("cast to ", dtype_name(to), " has no vectorized loop");
                         });
}

}  // namespace tern::cpu

TERN_CPU_V3_END
