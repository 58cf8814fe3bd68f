// Reference kernels: a plain-loop kernel for every op, the oracle for every fast kernel and the
// last fallback. Each family lives in <family>_ref.cc; correctness over speed, always.
#pragma once

#include <vector>

#include "tern/kernels/kernel.h"

namespace tern::kernels::ref {

// Registers every reference kernel into `r` (idempotent).
void register_ref_kernels(KernelRegistry& r);

void register_unary_ref(KernelRegistry& r);
void register_binary_ref(KernelRegistry& r);
void register_reduce_ref(KernelRegistry& r);
void register_matmul_ref(KernelRegistry& r);
void register_shape_ref(KernelRegistry& r);
void register_softmax_ref(KernelRegistry& r);
void register_attention_ref(KernelRegistry& r);
void register_conv_ref(KernelRegistry& r);
void register_norm_ref(KernelRegistry& r);
void register_nn_misc_ref(KernelRegistry& r);
void register_random_ref(KernelRegistry& r);
void register_optimizer_ref(KernelRegistry& r);
void register_fused_ref(KernelRegistry& r);
void register_loss_scale_ref(KernelRegistry& r);
void register_feature_ref(KernelRegistry& r);

// Adds a "ref" candidate for `op` (priority 0, deterministic).
inline void add_ref(KernelRegistry& r, std::string_view op, std::vector<DType> dtypes,
                    KernelFn fn) {
  add_fn_kernel(r, op, "ref", std::move(dtypes), 0, std::move(fn));
}

// Maps a flat index of an output shape to the flat index of an input broadcast to it.
class BroadcastIndex {
 public:
  BroadcastIndex(const Shape& in, const Shape& out);
  int64_t operator()(int64_t out_index) const;
  bool identity() const { return identity_; }

 private:
  std::vector<int64_t> out_dims_;
  std::vector<int64_t> in_strides_;  // 0 on broadcast dims, aligned to out rank
  bool identity_ = false;
};

}  // namespace tern::kernels::ref
