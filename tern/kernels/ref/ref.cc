// The list of reference kernel families, and the broadcast indexer they share.
#include "tern/kernels/ref/ref.h"

#include <mutex>

namespace tern::kernels::ref {

void register_ref_kernels(KernelRegistry& r) {
  register_unary_ref(r);
  register_binary_ref(r);
  register_reduce_ref(r);
  register_matmul_ref(r);
  register_shape_ref(r);
  register_softmax_ref(r);
  register_attention_ref(r);
  register_conv_ref(r);
  register_norm_ref(r);
  register_nn_misc_ref(r);
  register_random_ref(r);
  register_optimizer_ref(r);
  register_fused_ref(r);
  register_loss_scale_ref(r);
  register_feature_ref(r);
}

BroadcastIndex::BroadcastIndex(const Shape& in, const Shape& out) : out_dims_(out.dims()) {
  identity_ = in == out;
  int r = out.rank();
  in_strides_.assign(static_cast<size_t>(r), 0);
  std::vector<int64_t> s = in.strides();
  for (int i = 0; i < in.rank(); ++i) {
    int o = r - in.rank() + i;
    if (in.dim(i) != 1) in_strides_[static_cast<size_t>(o)] = s[static_cast<size_t>(i)];
  }
}

int64_t BroadcastIndex::operator()(int64_t out_index) const {
  if (identity_) return out_index;
  int64_t in = 0;
  for (int i = static_cast<int>(out_dims_.size()) - 1; i >= 0; --i) {
    int64_t d = out_dims_[static_cast<size_t>(i)];
    int64_t c = out_index % d;
    out_index /= d;
    in += c * in_strides_[static_cast<size_t>(i)];
  }
  return in;
}

}  // namespace tern::kernels::ref
