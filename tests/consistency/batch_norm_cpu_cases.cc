// Consistency cases for the vectorized batch norm kernels (tern/backends/cpu/batch_norm_cpu.cc) at
// sizes that split rows over threads and cross the f32 row blocks: an MLP activation [128, 512],
// a ResNet-like NHWC tensor, a channel count that is not a SIMD multiple, and data whose mean is
// far from zero (the shifted variance must not cancel). Forward only: the small cases in
// norm_cases.cc check the gradient rules.
#include "tests/consistency/op_case.h"

namespace tern::testing {

TERN_OP_CASES(batch_norm_cpu) {
  const ops::Attrs eps = {{"epsilon", 1e-3}};
  auto training = [&](Shape x, int64_t c, double lo, double hi, const char* label) {
    return OpCase{"batch_norm_training",
                  {In(x, lo, hi), In({c}, 0.5, 1.5), In({c})},
                  eps,
                  false,
                  {DType::kF32},
                  1e-5,
                  label};
  };
  auto grad = [&](Shape x, int64_t c, const char* label) {
    return OpCase{"batch_norm_grad",
                  {In(x), In(x, -2, 3), In({c}, 0.5, 1.5), In({c}, 0.4, 0.6), In({c}, 1.5, 2.5)},
                  eps,
                  false,
                  {DType::kF32},
                  1e-5,
                  label};
  };
  return {
      training({128, 512}, 512, -1, 1, "cpu_vec-mlp"),
      training({8, 20, 20, 64}, 64, -2, 3, "cpu_vec-nhwc"),
      training({300, 37}, 37, 99, 101, "cpu_vec-offset"),
      grad({128, 512}, 512, "cpu_vec-mlp"),
      grad({8, 20, 20, 64}, 64, "cpu_vec-nhwc"),
      grad({300, 37}, 37, "cpu_vec-odd-channels"),
      {"batch_norm_inference",
       {In({8, 20, 20, 64}), In({64}, 0.5, 1.5), In({64}), In({64}), In({64}, 0.5, 1.5)},
       eps,
       false,
       {DType::kF32},
       1e-5,
       "cpu_vec-nhwc"},
  };
}

}  // namespace tern::testing
