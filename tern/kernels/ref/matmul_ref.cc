// Reference matmul: triple loop per batch, accumulating in double.
#include "tern/kernels/ref/ref.h"
#include "tern/ops/infer.h"

namespace tern::kernels::ref {
namespace {

// T: the inputs' type; O: the output's (T, or float for out_dtype = "f32").
template <typename T, typename O>
void matmul_ref(KernelContext& ctx) {
  const Tensor& a = ctx.inputs[0];
  const Tensor& b = ctx.inputs[1];
  Tensor& c = ctx.outputs[0];
  bool ta = ctx.attrs.get_bool("transpose_a"), tb = ctx.attrs.get_bool("transpose_b");
  int ra = a.rank(), rb = b.rank(), rc = c.rank();
  int64_t m = c.shape()[rc - 2], n = c.shape()[rc - 1];
  int64_t k = ta ? a.shape()[ra - 2] : a.shape()[ra - 1];
  // Batch shapes, broadcast to the output's batch shape.
  Shape batch_c(std::vector<int64_t>(c.shape().dims().begin(), c.shape().dims().end() - 2));
  Shape batch_a(std::vector<int64_t>(a.shape().dims().begin(), a.shape().dims().end() - 2));
  Shape batch_b(std::vector<int64_t>(b.shape().dims().begin(), b.shape().dims().end() - 2));
  BroadcastIndex ia(batch_a, batch_c), ib(batch_b, batch_c);
  const T* pa = a.data<T>();
  const T* pb = b.data<T>();
  O* pc = c.data<O>();
  int64_t a_rows = a.shape()[ra - 2], a_cols = a.shape()[ra - 1];
  int64_t b_rows = b.shape()[rb - 2], b_cols = b.shape()[rb - 1];
  for (int64_t bi = 0; bi < batch_c.num_elements(); ++bi) {
    const T* A = pa + ia(bi) * a_rows * a_cols;
    const T* B = pb + ib(bi) * b_rows * b_cols;
    O* C = pc + bi * m * n;
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        double acc = 0;
        for (int64_t p = 0; p < k; ++p) {
          double x = static_cast<double>(
              static_cast<compute_t<T>>(ta ? A[p * a_cols + i] : A[i * a_cols + p]));
          double y = static_cast<double>(
              static_cast<compute_t<T>>(tb ? B[j * b_cols + p] : B[p * b_cols + j]));
          acc += x * y;
        }
        C[i * n + j] = static_cast<O>(static_cast<compute_t<O>>(acc));
      }
    }
  }
}

}  // namespace

void register_matmul_ref(KernelRegistry& r) {
  add_ref(r, "matmul", ops::kFloatDTypes, [](KernelContext& ctx) {
    const bool f32_out = ctx.outputs[0].dtype() != ctx.inputs[0].dtype();
    dispatch_float(ctx.inputs[0].dtype(), "matmul", [&](auto tag) {
      using T = decltype(tag);
      f32_out ? matmul_ref<T, float>(ctx) : matmul_ref<T, T>(ctx);
    });
  });
}

}  // namespace tern::kernels::ref
