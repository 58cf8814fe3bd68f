// Inference of fused_elementwise's column sums: the second output's type, and errors naming the
// attribute at fault.
#include <gtest/gtest.h>

#include <functional>

#include "tern/base/error.h"
#include "tern/ops/fused_program.h"
#include "tern/ops/registry.h"

namespace tern::ops {
namespace {

std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    return e.message();
  }
  return "";
}

// relu(in0) as program attributes.
Attrs relu_program() {
  FusedProgram p;
  p.num_inputs = 1;
  p.code = {{FusedOpcode::kRelu, 0}};
  Attrs attrs;
  p.to_attrs(attrs);
  return attrs;
}

TEST(FusedOps, ElementwiseColumnSums) {
  const OpDef& op = OpRegistry::global().get("fused_elementwise");
  std::vector<TensorType> bf16 = {{DType::kBF16, {2, 3, 8}}};
  Attrs plain = relu_program();
  EXPECT_EQ(op.check_and_infer("f", bf16, plain).size(), 1u);

  Attrs sums = relu_program();
  sums.set("column_sum", true);
  std::vector<TensorType> out = op.check_and_infer("f", bf16, sums);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0], (TensorType{DType::kBF16, {2, 3, 8}}));
  EXPECT_EQ(out[1], (TensorType{DType::kBF16, {8}}));
  sums.set("sum_dtype", std::string("f32"));
  EXPECT_EQ(op.check_and_infer("f", bf16, sums)[1], (TensorType{DType::kF32, {8}}));

  sums.set("sum_dtype", std::string("f16"));
  EXPECT_NE(error_of([&] {
              op.check_and_infer("f", bf16, sums);
            }).find("sum_dtype must be \"\" (the output's dtype) or \"f32\", got \"f16\""),
            std::string::npos);
  Attrs orphan = relu_program();
  orphan.set("sum_dtype", std::string("f32"));
  EXPECT_NE(error_of([&] {
              op.check_and_infer("f", bf16, orphan);
            }).find("sum_dtype \"f32\" needs column_sum = true"),
            std::string::npos);
  Attrs scalar = relu_program();
  scalar.set("column_sum", true);
  std::vector<TensorType> rank0 = {{DType::kF32, {}}};
  EXPECT_NE(error_of([&] {
              op.check_and_infer("f", rank0, scalar);
            }).find("column_sum needs an output of rank >= 1"),
            std::string::npos);
  std::vector<TensorType> f64 = {{DType::kF64, {4, 2}}};
  scalar.set("sum_dtype", std::string("f32"));
  EXPECT_NE(error_of([&] {
              op.check_and_infer("f", f64, scalar);
            }).find("sum_dtype \"f32\" needs an f32, bf16 or f16 output, got f64"),
            std::string::npos);
}

}  // namespace
}  // namespace tern::ops
