// The list of built-in op families.
#include "tern/ops/families.h"

#include "tern/ops/registry.h"

namespace tern::ops {

void register_builtin_ops(OpRegistry& r) {
  register_source_ops(r);
  register_unary_ops(r);
  register_binary_ops(r);
  register_reduce_ops(r);
  register_matmul_ops(r);
  register_shape_ops(r);
  register_softmax_ops(r);
  register_attention_ops(r);
  register_conv_ops(r);
  register_norm_ops(r);
  register_nn_misc_ops(r);
  register_random_ops(r);
  register_optimizer_ops(r);
  register_fused_ops(r);
  register_loss_scale_ops(r);
  register_feature_ops(r);
}

}  // namespace tern::ops
