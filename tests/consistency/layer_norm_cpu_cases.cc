// Consistency cases for the vectorized layer norm kernels (tern/backends/cpu/layer_norm_cpu.cc) at
// sizes that split rows over threads and cross the f32 row blocks of the gradient sums: a
// Transformer activation [8, 128, 256], a row length that is not a SIMD multiple, and rows whose
// mean is far from zero. Forward only: norm_cases.cc checks the gradient rules.
#include "tests/consistency/op_case.h"

namespace tern::testing {

TERN_OP_CASES(layer_norm_cpu) {
  const ops::Attrs eps = {{"epsilon", 1e-5}};
  auto fwd = [&](Shape x, int64_t d, double lo, double hi, const char* label) {
    return OpCase{
        "layer_norm", {In(x, lo, hi), In({d}, 0.5, 1.5), In({d})}, eps, false, {DType::kF32}, 1e-5,
        label};
  };
  auto grad = [&](Shape x, Shape rows, int64_t d, const char* label) {
    return OpCase{"layer_norm_grad",
                  {In(x), In(x, -2, 3), In({d}, 0.5, 1.5), In(rows, 0.4, 0.6), In(rows, 0.5, 2)},
                  {},
                  false,
                  {DType::kF32},
                  1e-5,
                  label};
  };
  return {
      fwd({8, 128, 256}, 256, -1, 1, "cpu_vec-transformer"),
      fwd({300, 37}, 37, 49, 51, "cpu_vec-offset"),
      grad({8, 128, 256}, {8, 128}, 256, "cpu_vec-transformer"),
      grad({300, 37}, {300}, 37, "cpu_vec-odd-rows"),
  };
}

}  // namespace tern::testing
