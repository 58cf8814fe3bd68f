// What the served pooled-convolution kernels share (conv_pool_one_channel_cpu.cc for one input
// channel, conv_pool_cpu.cc for several): the signature rules of fused_conv2d with a folded max
// pooling that both take, and their geometry.
#pragma once

#include <memory>
#include <string>

#include "tern/backends/cpu/cpu_kernels.h"
#include "tern/kernels/kernel.h"
#include "tern/ops/conv_geometry.h"

namespace tern::cpu {

struct PooledConvGeometry {
  ops::Conv2dGeometry conv;
  ops::Pool2dGeometry pool;
  bool argmax = false;  // pool = "max_argmax": the windows' argmax is a second output
};

// "" if `sig` is an f32 fused_conv2d with a max pooling (with its argmax too where `argmax_ok`),
// no residual and activation none or relu (then `geo` holds its convolution and pooling); else
// why not.
inline std::string decline_pooled_conv(const kernels::KernelSignature& sig, PooledConvGeometry* geo,
                                       bool argmax_ok = false) {
  const ops::Attrs& attrs = *sig.attrs;
  const std::string pool = attrs.has("pool") ? attrs.get_string("pool") : std::string("none");
  if (pool == "max_argmax" && !argmax_ok) return "the pooling's argmax";
  if (pool != "max" && pool != "max_argmax") return "no max pooling";
  geo->argmax = pool == "max_argmax";
  if (attrs.get_bool("has_residual")) return "a residual";
  const std::string& act = attrs.get_string("activation");
  if (act != "none" && act != "relu") return "activation " + act + " (none or relu only)";
  for (const TensorType& t : sig.inputs) {
    if (t.dtype != DType::kF32) return "f32 only";
  }
  geo->conv = ops::conv2d_geometry(sig.inputs[0].shape, sig.inputs[1].shape, attrs);
  geo->pool = ops::pool2d_geometry(geo->conv.output_shape(), ops::fused_pool_attrs(attrs));
  return "";
}

// Whether the pooling is 2x2 at stride 2 with no padding before the image.
inline bool pool_2x2_stride_2(const ops::Pool2dGeometry& p) {
  return p.kh == 2 && p.kw == 2 && p.stride_h == 2 && p.stride_w == 2 && p.pad_top == 0 &&
         p.pad_left == 0;
}

// The fused_conv2d candidate `name` of kernel K (made from the geometry, relu, bias), ranked ahead
// of oneDNN's convolution, taking the signatures `decline` accepts.
template <typename K>
kernels::KernelCandidate pooled_conv_candidate(
    std::string name,
    std::string (*decline)(const kernels::KernelSignature&, PooledConvGeometry*)) {
  kernels::KernelCandidate c;
  c.name = name;
  c.dtypes = {DType::kF32};
  c.priority = kOneDnnPriority + 5;
  c.decline = [decline](const kernels::KernelSignature& sig) {
    PooledConvGeometry geo;
    return decline(sig, &geo);
  };
  c.create = [decline,
              name](const kernels::KernelSignature& sig) -> std::unique_ptr<kernels::Kernel> {
    PooledConvGeometry geo;
    std::string why = decline(sig, &geo);
    if (!why.empty()) throw_error(ErrorCode::kInternal, name, " ", sig.to_string(), ": ", why);
    return std::make_unique<K>(geo, sig.attrs->get_string("activation") == "relu",
                               sig.attrs->get_bool("has_bias"));
  };
  return c;
}

}  // namespace tern::cpu
