// Conv/pool geometry: output sizes and per-side paddings of conv2d and 2-D pooling from shapes
// and attributes, following TensorFlow (NHWC inputs, HWIO filters). Every conv/pool OpDef, ref
// kernel and fast kernel computes its geometry here, so they agree by construction.
//
// SAME: out = ceil(in / stride), total pad = max((out - 1) * stride + (k - 1) * dil + 1 - in, 0),
//       top/left get floor(total / 2), the extra one goes bottom/right.
// VALID: no padding, out = floor((in - ((k - 1) * dil + 1)) / stride) + 1 (must be >= 1).
// EXPLICIT (conv2d only): explicit_paddings = [top, bottom, left, right].
//
// Attributes absent from `attrs` take the OpDef defaults (strides [1, 1], padding "VALID",
// explicit_paddings [], dilations [1, 1], groups 1), so callers may pass a node's attrs directly.
#pragma once

#include <cstdint>
#include <string>

#include "tern/ops/attrs.h"
#include "tern/tensor/shape.h"

namespace tern::ops {

struct Conv2dGeometry {
  int64_t n = 0, h = 0, w = 0, c_in = 0;  // input x [n, h, w, c_in]
  int64_t kh = 0, kw = 0, c_out = 0;      // filter [kh, kw, c_in / groups, c_out]
  int64_t groups = 1;                     // c_in and c_out are multiples of groups
  int64_t stride_h = 1, stride_w = 1;
  int64_t dil_h = 1, dil_w = 1;
  int64_t pad_top = 0, pad_bottom = 0, pad_left = 0, pad_right = 0;
  int64_t out_h = 0, out_w = 0;  // output y [n, out_h, out_w, c_out]

  int64_t c_in_per_group() const { return c_in / groups; }
  int64_t c_out_per_group() const { return c_out / groups; }
  Shape input_shape() const { return Shape{n, h, w, c_in}; }
  Shape filter_shape() const { return Shape{kh, kw, c_in / groups, c_out}; }
  Shape output_shape() const { return Shape{n, out_h, out_w, c_out}; }
};

struct Pool2dGeometry {
  int64_t n = 0, h = 0, w = 0, c = 0;  // input x [n, h, w, c]
  int64_t kh = 0, kw = 0;
  int64_t stride_h = 1, stride_w = 1;
  int64_t pad_top = 0, pad_bottom = 0, pad_left = 0, pad_right = 0;
  int64_t out_h = 0, out_w = 0;  // output y [n, out_h, out_w, c]

  Shape input_shape() const { return Shape{n, h, w, c}; }
  Shape output_shape() const { return Shape{n, out_h, out_w, c}; }
};

// The most positions a pooling window of max_pool2d_argmax may have (its argmax is u8).
constexpr int64_t kMaxPoolArgmaxWindow = 256;

// Geometry of conv2d(x, filter). InvalidArgument "conv2d: <problem>; x [..], filter [..]" on bad
// ranks, channel mismatch, bad attributes or an empty output.
Conv2dGeometry conv2d_geometry(const Shape& x, const Shape& filter, const Attrs& attrs);
// Geometry of max_pool2d / avg_pool2d on x (attrs ksize, strides, padding "SAME"|"VALID").
// InvalidArgument "pool2d: <problem>; x [..]".
Pool2dGeometry pool2d_geometry(const Shape& x, const Attrs& attrs);

// Non-throwing forms for shape inference: fill `out` and return "", or return the problem alone
// ("input channels 3 != filter in-channels*groups 4") for the caller to wrap with its context.
std::string try_conv2d_geometry(const Shape& x, const Shape& filter, const Attrs& attrs,
                                Conv2dGeometry* out);
std::string try_pool2d_geometry(const Shape& x, const Attrs& attrs, Pool2dGeometry* out);

// The max_pool2d attributes (ksize, strides, padding) of a fused_conv2d with pool = "max", from
// its pool_ksize, pool_strides and pool_padding.
Attrs fused_pool_attrs(const Attrs& fused);

// The first layer of a grayscale-image CNN as tern trains it fused with its pooling (passes
// fuse_epilogue and pool_argmax, where the device has the kernels): one input channel, a 3x3
// filter at stride 1 without dilation, under a 2x2 / 2 max pooling whose windows lie inside the
// convolution's output. Its forward is fused_conv2d with pool = "max_argmax" and its filter
// gradient conv2d_backprop_filter_pooled: the convolution-sized output and gradient are never
// stored.
bool one_channel_pooled_conv(const Conv2dGeometry& g, const Pool2dGeometry& pool);

// One spatial dimension: output size and paddings for input `in`, kernel `k`, stride, dilation
// and padding "SAME"|"VALID" (EXPLICIT: pass the two pads in `pad_before`/`pad_after` and
// padding "EXPLICIT"). Returns "" or the problem.
std::string spatial_geometry(int64_t in, int64_t k, int64_t stride, int64_t dilation,
                             const std::string& padding, int64_t* pad_before, int64_t* pad_after,
                             int64_t* out);

}  // namespace tern::ops
