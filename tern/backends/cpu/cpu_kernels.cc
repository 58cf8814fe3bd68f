// The list of fast CPU kernel families.
#include "tern/backends/cpu/cpu_kernels.h"

#include <cstdlib>

#include "tern/backends/cpu/cpu_isa.h"
#include "tern/backends/cpu/elementwise_kernels.h"
#include "tern/backends/cpu/onednn_kernels.h"
#include "tern/base/error.h"

namespace tern::cpu {

bool env_switch(const char* name, std::string_view on, std::string_view off) {
  const char* v = std::getenv(name);
  const std::string_view s = v == nullptr ? "1" : v;
  TERN_CHECK_ARG(s == "0" || s == "1", name, "='", s, "': expected 1 (", on, ") or 0 (", off, ")");
  return s == "1";
}

void register_cpu_kernels(kernels::KernelRegistry& r) {
  register_onednn_matmul(r);
  register_onednn_conv(r);
  register_onednn_widened(r);
  register_onednn_pool(r);
  register_onednn_batch_norm(r);
  register_onednn_softmax(r);
  register_onednn_eltwise(r);
  // The vectorized families are compiled for x86-64-v3 (cpu_isa.h); on an older CPU (or with
  // TERN_CPU_ISA=x86-64) oneDNN and ref serve their ops.
  if (cpu_isa() == CpuIsa::kX86_64_v3) {
    register_optimizer_kernels(r);
    register_softmax_xent_kernels(r);
    register_dropout_kernels(r);
    register_attention_kernels(r);
    register_max_pool_kernels(r);
    register_max_pool_grad_kernels(r);
    register_pool_argmax_kernels(r);
    register_pooled_filter_grad_kernels(r);
    register_conv_pool_one_channel_kernels(r);
    register_pooled_winograd_kernels(r);
    register_conv_small_image_kernels(r);
    register_conv_pool_kernels(r);
    register_matmul_bf16_kernels(r);
    register_matmul_f32_kernels(r);
    register_reduce_kernels(r);
    register_transpose_kernels(r);
    register_scatter_add_kernels(r);
    register_row_copy_kernels(r);
    register_elementwise_unary_kernels(r);
    register_elementwise_binary_kernels(r);
    register_fused_elementwise_kernels(r);
    register_batch_norm_kernels(r);
    register_layer_norm_kernels(r);
  }
  // all_finite scans with nan_guard.h's baseline loops (memory-bound): every CPU.
  register_all_finite_kernels(r);
}

}  // namespace tern::cpu
