// Shared shape+dtype inference building blocks for op definitions.
#pragma once

#include <vector>

#include "tern/ops/op_def.h"

namespace tern::ops {

inline const std::vector<DType> kFloatDTypes = {DType::kF32, DType::kF64, DType::kBF16,
                                                DType::kF16};
inline const std::vector<DType> kNumericDTypes = {DType::kF32, DType::kF64, DType::kBF16,
                                                  DType::kF16, DType::kI8,  DType::kU8,
                                                  DType::kI32, DType::kI64};
inline const std::vector<DType> kAllDTypeList = {DType::kF32, DType::kF64, DType::kBF16,
                                                 DType::kF16, DType::kI8,  DType::kU8,
                                                 DType::kI32, DType::kI64, DType::kBool};
inline const std::vector<DType> kIndexDTypes = {DType::kI32, DType::kI64};

// Output 0 has the type of input `i`.
std::vector<TensorType> infer_same_as_input(const InferContext& ctx, size_t i = 0);
// All inputs must share a dtype; the output shape is their NumPy broadcast.
std::vector<TensorType> infer_broadcast(const InferContext& ctx, DType out_dtype);
// Checks that inputs `a` and `b` have the same dtype; fails naming both otherwise.
void require_same_dtype(const InferContext& ctx, size_t a, size_t b);
// Checks that inputs `a` and `b` have identical types.
void require_same_type(const InferContext& ctx, size_t a, size_t b);
// Checks input i's rank.
void require_rank(const InferContext& ctx, size_t i, int rank);
// Normalized, sorted, de-duplicated axes of attribute `axes` for rank r ([] = all axes).
std::vector<int> reduction_axes(const InferContext& ctx, const std::vector<int64_t>& axes, int r);

}  // namespace tern::ops
