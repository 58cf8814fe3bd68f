// NaN guards for the oneDNN kernels whose JIT code drops a NaN that ref keeps: the relu post-op
// is max(x, 0) (maps NaN to 0), max pooling ignores a NaN in its window, softmax's exp clamps its
// argument (a NaN in a row gives finite probabilities). A NaN hidden there keeps the loss finite
// while the backward pass writes NaN into the weights (bad-input report F1). The guards:
// relu_in_place runs the epilogue relu after the primitive; has_nan / has_non_finite are the
// cheap scans (one vectorized read) that decide whether a call must fall back to ref, which
// RefFallback holds. Not here: kernels that keep NaN by themselves (the vectorized loops).
#pragma once

#include <memory>

#include "tern/kernels/kernel.h"
#include "tern/tensor/tensor.h"

namespace tern::cpu {

// True if any element is NaN (f32, f64, bf16, f16; other dtypes hold no NaN).
bool has_nan(const Tensor& t);
// True if any element is NaN or +-Inf (float dtypes; false for others).
bool has_non_finite(const Tensor& t);

// t = t < 0 ? 0 : t over f32 or bf16, NaN kept (the ref relu), split over the OpenMP threads.
void relu_in_place(Tensor& t);

// The ref kernel for one signature, run when a guard finds that the fast kernel would differ.
class RefFallback {
 public:
  RefFallback() = default;
  explicit RefFallback(const kernels::KernelSignature& sig);
  void run(kernels::KernelContext& ctx);

 private:
  std::unique_ptr<kernels::Kernel> ref_;
};

}  // namespace tern::cpu
