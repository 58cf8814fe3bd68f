// The built-in op families. Each family lives in its own <family>_ops.cc and registers its OpDefs
// here; adding a family adds one declaration and one line in families.cc.
#pragma once

namespace tern::ops {

class OpRegistry;

void register_source_ops(OpRegistry& r);     // input, variable, constant
void register_unary_ops(OpRegistry& r);      // neg, exp, relu, gelu, cast, ... (+ their grads)
void register_binary_ops(OpRegistry& r);     // add, mul, pow, comparisons, where, ...
void register_reduce_ops(OpRegistry& r);     // sum, mean, max, argmax, variance, ...
void register_matmul_ops(OpRegistry& r);     // matmul (batched, transposes)
void register_shape_ops(OpRegistry& r);      // reshape, transpose, concat, gather, pad, ...
void register_softmax_ops(OpRegistry& r);    // softmax, log_softmax, cross-entropies
void register_attention_ops(OpRegistry& r);  // attention (scaled dot-product, heads) + grad
void register_conv_ops(OpRegistry& r);       // conv2d, pooling (+ gradients)
void register_norm_ops(OpRegistry& r);       // batch_norm, layer_norm (+ gradients)
void register_nn_misc_ops(OpRegistry& r);    // dropout, embedding
void register_random_ops(OpRegistry& r);     // uniform, normal, truncated normal
void register_optimizer_ops(OpRegistry& r);  // fused sgd/adam/adamw/rmsprop updates
void register_fused_ops(OpRegistry& r);      // ops the fusion passes create
// all_finite, loss_scale_update (dynamic loss scaling)
void register_loss_scale_ops(OpRegistry& r);
// vocab_lookup, bucketize, hash_bucket, fingerprint_combine (data transforms, tern/transform)
void register_feature_ops(OpRegistry& r);

// Registers all of the above (OpRegistry::global() calls this once).
void register_builtin_ops(OpRegistry& r);

}  // namespace tern::ops
