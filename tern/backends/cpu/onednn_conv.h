// oneDNN convolution descriptors shared by the forward (conv2d, fused_conv2d) and backward
// (conv2d_backprop_input, conv2d_backprop_filter) kernels: NHWC activations, HWIO filters (as
// oneDNN [G,] O, I, KH, KW dims with strides), geometry from tern/ops/conv_geometry.h.
// Primitives ask for weights in `any` layout (oneDNN's blocked kernels are several times faster
// than its plain-weight gemm path); WeightsReorder moves filters between the two layouts.
#pragma once

#include "tern/backends/cpu/onednn_common.h"
#include "tern/ops/conv_geometry.h"

namespace tern::cpu::onednn {

struct ConvDescs {
  ops::Conv2dGeometry geo;
  dnnl::memory::desc src, dst;  // nhwc
  dnnl::memory::desc weights;   // the user's HWIO filter
  dnnl::memory::desc weights_any;
  dnnl::memory::desc bias;  // [c_out] when requested, else empty
  dnnl_dims strides, dilates, pad_l, pad_r;
};

ConvDescs conv_descs(const ops::Conv2dGeometry& geo, DType dtype, bool with_bias);

// Forward primitive desc for training-time use (also the hint for the backward primitives).
dnnl::convolution_forward::primitive_desc conv_forward_pd(const ConvDescs& d,
                                                          const dnnl::post_ops& ops = {});

// Common reasons to decline a conv signature: dtypes, empty tensors.
std::string conv_decline_common(const kernels::KernelSignature& sig);

// Moves a filter between the user's HWIO layout and the layout a primitive chose; a no-op
// (`needed()` false) when they are the same.
class WeightsReorder {
 public:
  WeightsReorder() = default;
  // from_user: user -> primitive layout (forward, backward data); else primitive -> user.
  WeightsReorder(const dnnl::memory::desc& user, const dnnl::memory::desc& primitive,
                 bool from_user);
  bool needed() const { return reorder_.defined(); }
  // The buffer holding the filter in the primitive's layout (valid when needed()).
  void* buffer() const { return buffer_.data(); }
  // Forward direction: `user` -> buffer(); returns what the primitive should read.
  const void* to_primitive(const void* user);
  // Backward direction: buffer() -> `user`.
  void to_user(void* user);

 private:
  Reorder reorder_;
  AlignedBuffer buffer_;
};

}  // namespace tern::cpu::onednn

namespace tern::cpu {

// conv2d_backprop_input / conv2d_backprop_filter (onednn_conv_backward.cc); called by
// register_onednn_conv.
void register_onednn_conv_backward(kernels::KernelRegistry& r);

}  // namespace tern::cpu
