// Consistency cases: matmul.
#include "tests/consistency/op_case.h"

namespace tern::testing {

TERN_OP_CASES(matmul) {
  return {
      {"matmul", {In({3, 4}), In({4, 5})}},
      {"matmul", {In({4, 3}), In({4, 5})}, {{"transpose_a", true}}, true, {}, 1e-5, "ta"},
      {"matmul", {In({3, 4}), In({5, 4})}, {{"transpose_b", true}}, true, {}, 1e-5, "tb"},
      {"matmul",
       {In({2, 4, 3}), In({5, 4})},
       {{"transpose_a", true}, {"transpose_b", true}},
       true,
       {},
       1e-5,
       "batched-broadcast"},
      {"matmul", {In({2, 1, 3, 4}), In({3, 4, 2})}, {}, true, {}, 1e-5, "batch-broadcast-both"},
      // out_dtype = "f32" (mixed_bfloat16's weight gradients): 16-bit inputs, an f32 result
      // accumulated and rounded once; the shape of W2's first weight gradient (x^T dy), and a
      // batched one. (No f64 form, so no gradient check here; amp_test covers the rewrite.)
      {"matmul",
       {In({128, 96}), In({128, 64})},
       {{"transpose_a", true}, {"out_dtype", std::string("f32")}},
       false,
       {DType::kBF16, DType::kF16, DType::kF32},
       1e-5,
       "f32-out"},
      {"matmul",
       {In({2, 3, 40}), In({2, 40, 24})},
       {{"out_dtype", std::string("f32")}},
       false,
       {DType::kBF16, DType::kF32},
       1e-5,
       "f32-out-batched"},
      // Row products of 4096 rows (a batch of sequences flattened), the size from which
      // matmul_bf16_cpu.cc's cpu_matmul_bf16 takes bf16 a b and a b^T, and matmul_f32_cpu.cc's
      // cpu_matmul_f32 f32 ones; narrow so ref stays quick.
      {"matmul",
       {In({4096, 16}), In({16, 40})},
       {{"out_dtype", std::string("f32")}},
       false,
       {DType::kBF16, DType::kF32},
       1e-5,
       "rows-f32-out"},
      {"matmul",
       {In({4096, 12}), In({20, 12})},
       {{"transpose_b", true}},
       false,
       {DType::kBF16, DType::kF32},
       1e-5,
       "rows-transposed-b"},
      // A deep f32 weight gradient (x^T dy with K >= 2048 and a small C: matmul_f32_cpu.cc's
      // cpu_weight_grad_f32); narrow so ref stays quick.
      {"matmul",
       {In({2048, 12}), In({2048, 20})},
       {{"transpose_a", true}},
       false,
       {DType::kF32},
       1e-5,
       "deep-weight-grad"},
  };
}

}  // namespace tern::testing
