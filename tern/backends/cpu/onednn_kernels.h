// Registration of the oneDNN kernel families, one function per family (each in its own
// onednn_<family>.cc); cpu_kernels.cc calls them. No oneDNN types here.
#pragma once

#include "tern/kernels/kernel.h"

namespace tern::cpu {

void register_onednn_matmul(kernels::KernelRegistry& r);
void register_onednn_conv(kernels::KernelRegistry& r);        // conv2d, fused_conv2d, backprops
void register_onednn_pool(kernels::KernelRegistry& r);        // max/avg/global pooling and grads
void register_onednn_batch_norm(kernels::KernelRegistry& r);  // training, inference, grad
void register_onednn_softmax(kernels::KernelRegistry& r);     // (log_)softmax and their grads
void register_onednn_eltwise(kernels::KernelRegistry& r);     // unary ops oneDNN runs faster
// bf16 matmuls and convolutions widened to f32 ("onednn_f32"); after the matmul and conv families.
void register_onednn_widened(kernels::KernelRegistry& r);

}  // namespace tern::cpu
