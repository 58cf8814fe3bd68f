// Reference conv2d and its two backprop ops: direct loops over NHWC/HWIO, accumulating in double.
// Each output element is computed once, as a gather over the elements that contribute to it, so
// results do not depend on loop order. Pooling lives in pool_ref.cc.
#include <vector>

#include "tern/kernels/index_check.h"
#include "tern/kernels/ref/ref.h"
#include "tern/ops/conv_geometry.h"
#include "tern/ops/infer.h"

namespace tern::kernels::ref {

void register_pool_ref(KernelRegistry& r);  // pool_ref.cc

namespace {

template <typename T>
double load(const T* p, int64_t i) {
  return static_cast<double>(static_cast<compute_t<T>>(p[i]));
}

template <typename T>
T store(double v) {
  return static_cast<T>(static_cast<compute_t<T>>(v));
}

// y[n, oh, ow, oc] = sum over (r, s, ic) of x[n, ih, iw, g * cin_g + ic] * f[r, s, ic, oc], with
// ih = oh * stride_h - pad_top + r * dil_h (likewise iw), g = oc / cout_g, pad taps skipped.
template <typename T>
void conv2d_ref(const ops::Conv2dGeometry& g, const T* x, const T* f, T* y) {
  int64_t cin_g = g.c_in_per_group(), cout_g = g.c_out_per_group();
  for (int64_t n = 0; n < g.n; ++n) {
    for (int64_t oh = 0; oh < g.out_h; ++oh) {
      for (int64_t ow = 0; ow < g.out_w; ++ow) {
        for (int64_t oc = 0; oc < g.c_out; ++oc) {
          int64_t c0 = (oc / cout_g) * cin_g;  // first input channel of oc's group
          double acc = 0;
          for (int64_t r = 0; r < g.kh; ++r) {
            int64_t ih = oh * g.stride_h - g.pad_top + r * g.dil_h;
            if (ih < 0 || ih >= g.h) continue;
            for (int64_t s = 0; s < g.kw; ++s) {
              int64_t iw = ow * g.stride_w - g.pad_left + s * g.dil_w;
              if (iw < 0 || iw >= g.w) continue;
              int64_t xi = ((n * g.h + ih) * g.w + iw) * g.c_in + c0;
              int64_t fi = (r * g.kw + s) * cin_g * g.c_out + oc;
              for (int64_t ic = 0; ic < cin_g; ++ic) {
                acc += load(x, xi + ic) * load(f, fi + ic * g.c_out);
              }
            }
          }
          y[((n * g.out_h + oh) * g.out_w + ow) * g.c_out + oc] = store<T>(acc);
        }
      }
    }
  }
}

// dx[n, ih, iw, ci] = sum over taps (r, s) and outputs (oh, ow) that read (ih, iw) through that
// tap, and over oc in ci's group, of dy[n, oh, ow, oc] * f[r, s, ci % cin_g, oc].
template <typename T>
void conv2d_backprop_input_ref(const ops::Conv2dGeometry& g, const T* dy, const T* f, T* dx) {
  int64_t cin_g = g.c_in_per_group(), cout_g = g.c_out_per_group();
  for (int64_t n = 0; n < g.n; ++n) {
    for (int64_t ih = 0; ih < g.h; ++ih) {
      for (int64_t iw = 0; iw < g.w; ++iw) {
        for (int64_t ci = 0; ci < g.c_in; ++ci) {
          int64_t grp = ci / cin_g, ic = ci % cin_g;
          double acc = 0;
          for (int64_t r = 0; r < g.kh; ++r) {
            int64_t th = ih + g.pad_top - r * g.dil_h;  // = oh * stride_h
            if (th < 0 || th % g.stride_h != 0 || th / g.stride_h >= g.out_h) continue;
            int64_t oh = th / g.stride_h;
            for (int64_t s = 0; s < g.kw; ++s) {
              int64_t tw = iw + g.pad_left - s * g.dil_w;
              if (tw < 0 || tw % g.stride_w != 0 || tw / g.stride_w >= g.out_w) continue;
              int64_t ow = tw / g.stride_w;
              int64_t di = ((n * g.out_h + oh) * g.out_w + ow) * g.c_out;
              int64_t fi = ((r * g.kw + s) * cin_g + ic) * g.c_out;
              for (int64_t oc = grp * cout_g; oc < (grp + 1) * cout_g; ++oc) {
                acc += load(dy, di + oc) * load(f, fi + oc);
              }
            }
          }
          dx[((n * g.h + ih) * g.w + iw) * g.c_in + ci] = store<T>(acc);
        }
      }
    }
  }
}

// df[r, s, ic, oc] = sum over (n, oh, ow) of x[n, ih, iw, g * cin_g + ic] * dy[n, oh, ow, oc].
template <typename T, typename O>
void conv2d_backprop_filter_ref(const ops::Conv2dGeometry& g, const T* x, const T* dy, O* df) {
  int64_t cin_g = g.c_in_per_group(), cout_g = g.c_out_per_group();
  for (int64_t r = 0; r < g.kh; ++r) {
    for (int64_t s = 0; s < g.kw; ++s) {
      for (int64_t ic = 0; ic < cin_g; ++ic) {
        for (int64_t oc = 0; oc < g.c_out; ++oc) {
          int64_t ci = (oc / cout_g) * cin_g + ic;
          double acc = 0;
          for (int64_t n = 0; n < g.n; ++n) {
            for (int64_t oh = 0; oh < g.out_h; ++oh) {
              int64_t ih = oh * g.stride_h - g.pad_top + r * g.dil_h;
              if (ih < 0 || ih >= g.h) continue;
              for (int64_t ow = 0; ow < g.out_w; ++ow) {
                int64_t iw = ow * g.stride_w - g.pad_left + s * g.dil_w;
                if (iw < 0 || iw >= g.w) continue;
                acc += load(x, ((n * g.h + ih) * g.w + iw) * g.c_in + ci) *
                       load(dy, ((n * g.out_h + oh) * g.out_w + ow) * g.c_out + oc);
              }
            }
          }
          df[((r * g.kw + s) * cin_g + ic) * g.c_out + oc] = store<O>(acc);
        }
      }
    }
  }
}

// The convolution's gradient made from a pooled op's dy and argmax as max_pool2d_grad_argmax
// makes it (each dy added, in double and in output order, to the element its argmax names,
// rounded to T): the unfused pair's operand. `op` names the op in a bad argmax's error.
template <typename T>
std::vector<T> unpooled_gradient_ref(const ops::Pool2dGeometry& p, const T* dy,
                                     const uint8_t* argmax, const char* op) {
  check_pool_argmax(p, argmax, op);
  std::vector<double> acc(static_cast<size_t>(p.input_shape().num_elements()), 0.0);
  for (int64_t n = 0; n < p.n; ++n) {
    for (int64_t oh = 0; oh < p.out_h; ++oh) {
      for (int64_t ow = 0; ow < p.out_w; ++ow) {
        for (int64_t c = 0; c < p.c; ++c) {
          const int64_t o = ((n * p.out_h + oh) * p.out_w + ow) * p.c + c, pos = argmax[o];
          const int64_t h = oh * p.stride_h - p.pad_top + pos / p.kw,
                        w = ow * p.stride_w - p.pad_left + pos % p.kw;
          acc[static_cast<size_t>(((n * p.h + h) * p.w + w) * p.c + c)] += load(dy, o);
        }
      }
    }
  }
  std::vector<T> dy_conv(acc.size());
  for (size_t i = 0; i < acc.size(); ++i) dy_conv[i] = store<T>(acc[i]);
  return dy_conv;
}

Shape shape_attr(const ops::Attrs& attrs, std::string_view name) {
  return Shape(attrs.get_ints(name));
}

}  // namespace

void register_conv_ref(KernelRegistry& r) {
  add_ref(r, "conv2d", ops::kFloatDTypes, [](KernelContext& ctx) {
    const Tensor &x = ctx.inputs[0], &f = ctx.inputs[1];
    ops::Conv2dGeometry g = ops::conv2d_geometry(x.shape(), f.shape(), ctx.attrs);
    dispatch_float(x.dtype(), "conv2d", [&](auto tag) {
      using T = decltype(tag);
      conv2d_ref<T>(g, x.data<T>(), f.data<T>(), ctx.outputs[0].data<T>());
    });
  });
  add_ref(r, "conv2d_backprop_input", ops::kFloatDTypes, [](KernelContext& ctx) {
    const Tensor &dy = ctx.inputs[0], &f = ctx.inputs[1];
    ops::Conv2dGeometry g =
        ops::conv2d_geometry(shape_attr(ctx.attrs, "input_shape"), f.shape(), ctx.attrs);
    dispatch_float(dy.dtype(), "conv2d_backprop_input", [&](auto tag) {
      using T = decltype(tag);
      conv2d_backprop_input_ref<T>(g, dy.data<T>(), f.data<T>(), ctx.outputs[0].data<T>());
    });
  });
  add_ref(r, "conv2d_backprop_filter", ops::kFloatDTypes, [](KernelContext& ctx) {
    const Tensor &x = ctx.inputs[0], &dy = ctx.inputs[1];
    ops::Conv2dGeometry g =
        ops::conv2d_geometry(x.shape(), shape_attr(ctx.attrs, "filter_shape"), ctx.attrs);
    dispatch_float(x.dtype(), "conv2d_backprop_filter", [&](auto tag) {
      using T = decltype(tag);
      Tensor& df = ctx.outputs[0];
      if (df.dtype() == x.dtype()) {
        conv2d_backprop_filter_ref<T, T>(g, x.data<T>(), dy.data<T>(), df.data<T>());
      } else {  // dfilter_dtype "f32" from 16-bit inputs
        conv2d_backprop_filter_ref<T, float>(g, x.data<T>(), dy.data<T>(), df.data<float>());
      }
    });
  });
  add_ref(r, "conv2d_backprop_filter_pooled", ops::kFloatDTypes, [](KernelContext& ctx) {
    const Tensor &x = ctx.inputs[0], &dy = ctx.inputs[1];
    ops::Conv2dGeometry g =
        ops::conv2d_geometry(x.shape(), shape_attr(ctx.attrs, "filter_shape"), ctx.attrs);
    ops::Pool2dGeometry p =
        ops::pool2d_geometry(g.output_shape(), ops::fused_pool_attrs(ctx.attrs));
    const auto* argmax = ctx.inputs[2].data<uint8_t>();
    dispatch_float(x.dtype(), "conv2d_backprop_filter_pooled", [&](auto tag) {
      using T = decltype(tag);
      Tensor& df = ctx.outputs[0];
      const std::vector<T> dy_conv =
          unpooled_gradient_ref(p, dy.data<T>(), argmax, "conv2d_backprop_filter_pooled");
      if (df.dtype() == x.dtype()) {
        conv2d_backprop_filter_ref<T, T>(g, x.data<T>(), dy_conv.data(), df.data<T>());
      } else {  // dfilter_dtype "f32" from 16-bit inputs
        conv2d_backprop_filter_ref<T, float>(g, x.data<T>(), dy_conv.data(), df.data<float>());
      }
    });
  });
  add_ref(r, "conv2d_backprop_input_pooled", ops::kFloatDTypes, [](KernelContext& ctx) {
    const Tensor &dy = ctx.inputs[0], &f = ctx.inputs[1];
    ops::Conv2dGeometry g =
        ops::conv2d_geometry(shape_attr(ctx.attrs, "input_shape"), f.shape(), ctx.attrs);
    ops::Pool2dGeometry p =
        ops::pool2d_geometry(g.output_shape(), ops::fused_pool_attrs(ctx.attrs));
    const auto* argmax = ctx.inputs[2].data<uint8_t>();
    dispatch_float(dy.dtype(), "conv2d_backprop_input_pooled", [&](auto tag) {
      using T = decltype(tag);
      const std::vector<T> dy_conv =
          unpooled_gradient_ref(p, dy.data<T>(), argmax, "conv2d_backprop_input_pooled");
      conv2d_backprop_input_ref<T>(g, dy_conv.data(), f.data<T>(), ctx.outputs[0].data<T>());
    });
  });
  add_ref(r, "conv2d_backprop_pooled", ops::kFloatDTypes, [](KernelContext& ctx) {
    const Tensor &x = ctx.inputs[0], &dy = ctx.inputs[1], &f = ctx.inputs[2];
    ops::Conv2dGeometry g = ops::conv2d_geometry(x.shape(), f.shape(), ctx.attrs);
    ops::Pool2dGeometry p =
        ops::pool2d_geometry(g.output_shape(), ops::fused_pool_attrs(ctx.attrs));
    const auto* argmax = ctx.inputs[3].data<uint8_t>();
    dispatch_float(x.dtype(), "conv2d_backprop_pooled", [&](auto tag) {
      using T = decltype(tag);
      const std::vector<T> dy_conv =
          unpooled_gradient_ref(p, dy.data<T>(), argmax, "conv2d_backprop_pooled");
      conv2d_backprop_input_ref<T>(g, dy_conv.data(), f.data<T>(), ctx.outputs[0].data<T>());
      Tensor& df = ctx.outputs[1];
      if (df.dtype() == x.dtype()) {
        conv2d_backprop_filter_ref<T, T>(g, x.data<T>(), dy_conv.data(), df.data<T>());
      } else {  // dfilter_dtype "f32" from 16-bit inputs
        conv2d_backprop_filter_ref<T, float>(g, x.data<T>(), dy_conv.data(), df.data<float>());
      }
    });
  });
  register_pool_ref(r);
}

}  // namespace tern::kernels::ref
