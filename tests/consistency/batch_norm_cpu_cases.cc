// Consistency cases for the vectorized batch norm kernels (tern/backends/cpu/batch_norm_cpu.cc) at
// sizes that split rows over threads and cross the f32 row blocks: an MLP activation [128, 512],
// a ResNet-like NHWC tensor, a channel count that is not a SIMD multiple, and data whose mean is
// far from zero (the shifted variance must not cancel), also over a wide [100, 300] whose
// channels end in a partial group of 16. Forward only: the small cases in
// norm_cases.cc check the gradient rules. The "mixed" cases run bf16 (and f16, ref only) x and
// dy with f32 gamma, beta and statistics, as the mixed_bfloat16 policy does. The "relu" cases
// run the folded relu (the gated gradient's y half negative), the "residual" ones the folded
// shortcut add.
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
  auto f32 = [](Shape s, double lo, double hi) {
    return InputSpec{std::move(s), lo, hi, DType::kF32, false, std::nullopt};
  };
  const std::vector<DType> half = {DType::kBF16, DType::kF16};
  auto mixed_training = [&](Shape x, int64_t c, double lo, double hi, const char* label) {
    return OpCase{"batch_norm_training",
                  {In(x, lo, hi), f32({c}, 0.5, 1.5), f32({c}, -1, 1)},
                  eps,
                  false,
                  half,
                  1e-5,
                  label};
  };
  auto mixed_grad = [&](Shape x, int64_t c, const char* label) {
    return OpCase{"batch_norm_grad",
                  {In(x), In(x, -2, 3), f32({c}, 0.5, 1.5), f32({c}, 0.4, 0.6), f32({c}, 1.5, 2.5)},
                  eps,
                  false,
                  half,
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
      mixed_training({8, 20, 20, 64}, 64, -2, 3, "mixed-nhwc"),
      mixed_training({128, 512}, 512, -1, 1, "mixed-mlp"),
      mixed_training({300, 37}, 37, 99, 101, "mixed-offset"),
      mixed_grad({8, 20, 20, 64}, 64, "mixed-nhwc"),
      mixed_grad({300, 37}, 37, "mixed-odd-channels"),
      mixed_grad({128, 512}, 512, "mixed-mlp"),
      training({100, 300}, 300, 99, 101, "cpu_vec-wide-offset"),
      grad({100, 300}, 300, "cpu_vec-wide"),
      {"batch_norm_training",
       {In({128, 512}, -2, 3), In({512}, 0.5, 1.5), In({512}), In({128, 512}, -1, 1)},
       {{"epsilon", 1e-3}, {"activation", "relu"}},
       false,
       {DType::kF32},
       1e-5,
       "cpu_vec-mlp-residual-relu"},
      {"batch_norm_grad",
       {In({128, 512}), In({128, 512}, -2, 3), In({512}, 0.5, 1.5), In({512}, 0.4, 0.6),
        In({512}, 1.5, 2.5), In({128, 512})},
       {{"epsilon", 1e-3}, {"activation", "relu"}},
       false,
       {DType::kF32},
       1e-5,
       "cpu_vec-mlp-relu"},
      {"batch_norm_grad",
       {In({128, 512}), In({128, 512}, -2, 3), f32({512}, 0.5, 1.5), f32({512}, 0.4, 0.6),
        f32({512}, 1.5, 2.5), In({128, 512})},
       {{"epsilon", 1e-3}, {"activation", "relu"}},
       false,
       half,
       1e-5,
       "mixed-mlp-relu"},
      {"batch_norm_training",
       {In({8, 20, 20, 64}, -2, 3), In({64}, 0.5, 1.5), In({64})},
       {{"epsilon", 1e-3}, {"activation", "relu"}},
       false,
       {DType::kF32},
       1e-5,
       "cpu_vec-relu"},
      {"batch_norm_training",
       {In({300, 37}, -2, 3), f32({37}, 0.5, 1.5), f32({37}, -1, 1)},
       {{"epsilon", 1e-3}, {"activation", "relu"}},
       false,
       half,
       1e-5,
       "mixed-relu"},
      {"batch_norm_training",
       {In({8, 20, 20, 64}, -2, 3), In({64}, 0.5, 1.5), In({64}), In({8, 20, 20, 64}, -1, 1)},
       {{"epsilon", 1e-3}, {"activation", "relu"}},
       false,
       {DType::kF32},
       1e-5,
       "cpu_vec-residual-relu"},
      {"batch_norm_training",
       {In({300, 37}, -2, 3), f32({37}, 0.5, 1.5), f32({37}, -1, 1), In({300, 37}, -1, 1)},
       eps,
       false,
       half,
       1e-5,
       "mixed-residual"},
      {"batch_norm_grad",
       {In({8, 20, 20, 64}), In({8, 20, 20, 64}, -2, 3), In({64}, 0.5, 1.5), In({64}, 0.4, 0.6),
        In({64}, 1.5, 2.5), In({8, 20, 20, 64})},
       {{"epsilon", 1e-3}, {"activation", "relu"}},
       false,
       {DType::kF32},
       1e-5,
       "cpu_vec-relu"},
      {"batch_norm_grad",
       {In({300, 37}), In({300, 37}, -2, 3), f32({37}, 0.5, 1.5), f32({37}, 0.4, 0.6),
        f32({37}, 1.5, 2.5), In({300, 37})},
       {{"epsilon", 1e-3}, {"activation", "relu"}},
       false,
       half,
       1e-5,
       "mixed-relu"},
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
