// Conv/pool geometry: TensorFlow's output-size and padding rules for conv2d and 2-D pooling.
#include "tern/ops/conv_geometry.h"

#include <vector>

#include "tern/base/checked_math.h"
#include "tern/base/error.h"

namespace tern::ops {
namespace {

std::vector<int64_t> ints_or(const Attrs& attrs, std::string_view name, std::vector<int64_t> dflt) {
  return attrs.has(name) ? attrs.get_ints(name) : dflt;
}

std::string string_or(const Attrs& attrs, std::string_view name, std::string dflt) {
  return attrs.has(name) ? attrs.get_string(name) : dflt;
}

// "" if `v` has two entries >= 1, else the problem.
std::string check_pair(const std::vector<int64_t>& v, std::string_view name) {
  if (v.size() != 2 || v[0] < 1 || v[1] < 1) {
    return str_cat(name, " must be two positive ints, got ", Shape(v).to_string());
  }
  return "";
}

std::string conv2d_problem(const Shape& x, const Shape& filter, const Attrs& attrs,
                           Conv2dGeometry* g) {
  if (x.rank() != 4) return str_cat("input must be rank 4 (NHWC), got rank ", x.rank());
  if (filter.rank() != 4) return str_cat("filter must be rank 4 (HWIO), got rank ", filter.rank());
  std::vector<int64_t> strides = ints_or(attrs, "strides", {1, 1});
  std::vector<int64_t> dilations = ints_or(attrs, "dilations", {1, 1});
  std::vector<int64_t> explicit_pads = ints_or(attrs, "explicit_paddings", {});
  std::string padding = string_or(attrs, "padding", "VALID");
  int64_t groups = attrs.has("groups") ? attrs.get_int("groups") : 1;
  if (std::string p = check_pair(strides, "strides"); !p.empty()) return p;
  if (std::string p = check_pair(dilations, "dilations"); !p.empty()) return p;
  if (padding != "SAME" && padding != "VALID" && padding != "EXPLICIT") {
    return str_cat("padding must be \"SAME\", \"VALID\" or \"EXPLICIT\", got \"", padding, "\"");
  }
  if (padding == "EXPLICIT") {
    bool ok = explicit_pads.size() == 4;
    for (int64_t p : explicit_pads) ok = ok && p >= 0;
    if (!ok) {
      return str_cat(
          "explicit_paddings must be 4 non-negative ints [top, bottom, left, right], got ",
          Shape(explicit_pads).to_string());
    }
  } else if (!explicit_pads.empty()) {
    return str_cat("explicit_paddings given but padding is \"", padding, "\" (use \"EXPLICIT\")");
  }
  if (groups < 1) return str_cat("groups must be >= 1, got ", groups);
  g->n = x[0], g->h = x[1], g->w = x[2], g->c_in = x[3];
  g->kh = filter[0], g->kw = filter[1], g->c_out = filter[3];
  g->groups = groups;
  if (g->kh < 1 || g->kw < 1) return str_cat("filter spatial dims must be >= 1");
  if (checked_mul(filter[2], groups, "conv2d channels") != g->c_in) {
    return str_cat("input channels ", g->c_in, " != filter in-channels*groups ",
                   filter[2] * groups);
  }
  if (g->c_out % groups != 0) {
    return str_cat("filter out-channels ", g->c_out, " is not a multiple of groups ", groups);
  }
  g->stride_h = strides[0], g->stride_w = strides[1];
  g->dil_h = dilations[0], g->dil_w = dilations[1];
  if (padding == "EXPLICIT") {
    g->pad_top = explicit_pads[0], g->pad_bottom = explicit_pads[1];
    g->pad_left = explicit_pads[2], g->pad_right = explicit_pads[3];
  }
  if (std::string p = spatial_geometry(g->h, g->kh, g->stride_h, g->dil_h, padding, &g->pad_top,
                                       &g->pad_bottom, &g->out_h);
      !p.empty()) {
    return str_cat("height: ", p);
  }
  if (std::string p = spatial_geometry(g->w, g->kw, g->stride_w, g->dil_w, padding, &g->pad_left,
                                       &g->pad_right, &g->out_w);
      !p.empty()) {
    return str_cat("width: ", p);
  }
  return "";
}

std::string pool2d_problem(const Shape& x, const Attrs& attrs, Pool2dGeometry* g) {
  if (x.rank() != 4) return str_cat("input must be rank 4 (NHWC), got rank ", x.rank());
  if (!attrs.has("ksize")) return "attribute 'ksize' is missing";
  std::vector<int64_t> ksize = attrs.get_ints("ksize");
  std::vector<int64_t> strides = ints_or(attrs, "strides", {1, 1});
  std::string padding = string_or(attrs, "padding", "VALID");
  if (std::string p = check_pair(ksize, "ksize"); !p.empty()) return p;
  if (std::string p = check_pair(strides, "strides"); !p.empty()) return p;
  if (padding != "SAME" && padding != "VALID") {
    return str_cat("padding must be \"SAME\" or \"VALID\", got \"", padding, "\"");
  }
  g->n = x[0], g->h = x[1], g->w = x[2], g->c = x[3];
  g->kh = ksize[0], g->kw = ksize[1];
  g->stride_h = strides[0], g->stride_w = strides[1];
  if (std::string p = spatial_geometry(g->h, g->kh, g->stride_h, 1, padding, &g->pad_top,
                                       &g->pad_bottom, &g->out_h);
      !p.empty()) {
    return str_cat("height: ", p);
  }
  if (std::string p = spatial_geometry(g->w, g->kw, g->stride_w, 1, padding, &g->pad_left,
                                       &g->pad_right, &g->out_w);
      !p.empty()) {
    return str_cat("width: ", p);
  }
  return "";
}

}  // namespace

std::string spatial_geometry(int64_t in, int64_t k, int64_t stride, int64_t dilation,
                             const std::string& padding, int64_t* pad_before, int64_t* pad_after,
                             int64_t* out) {
  // Extent of the dilated kernel: (k - 1) * dilation + 1.
  int64_t extent = checked_add(checked_mul(k - 1, dilation, "dilated kernel"), 1, "dilated kernel");
  if (padding == "SAME") {
    *out = in == 0 ? 0 : (in - 1) / stride + 1;
    int64_t needed = *out == 0 ? 0 : checked_add(checked_mul(*out - 1, stride, "padding"), extent);
    int64_t total = needed > in ? needed - in : 0;
    *pad_before = total / 2;
    *pad_after = total - *pad_before;
    return "";
  }
  if (padding == "VALID") *pad_before = *pad_after = 0;
  int64_t padded =
      checked_add(checked_add(in, *pad_before, "padded size"), *pad_after, "padded size");
  if (padded < extent) {
    return str_cat("input size ", in, " (padded ", padded, ") is smaller than the ",
                   dilation > 1 ? "dilated " : "", "kernel size ", extent);
  }
  *out = (padded - extent) / stride + 1;
  return "";
}

std::string try_conv2d_geometry(const Shape& x, const Shape& filter, const Attrs& attrs,
                                Conv2dGeometry* out) {
  Conv2dGeometry g;
  std::string problem;
  try {
    problem = conv2d_problem(x, filter, attrs, &g);
  } catch (const Error& e) {  // overflow or a wrongly typed attribute
    problem = e.message();
  }
  if (problem.empty()) *out = g;
  return problem;
}

std::string try_pool2d_geometry(const Shape& x, const Attrs& attrs, Pool2dGeometry* out) {
  Pool2dGeometry g;
  std::string problem;
  try {
    problem = pool2d_problem(x, attrs, &g);
  } catch (const Error& e) {  // overflow or a wrongly typed attribute
    problem = e.message();
  }
  if (problem.empty()) *out = g;
  return problem;
}

Conv2dGeometry conv2d_geometry(const Shape& x, const Shape& filter, const Attrs& attrs) {
  Conv2dGeometry g;
  std::string problem = try_conv2d_geometry(x, filter, attrs, &g);
  if (!problem.empty()) {
    throw_error(ErrorCode::kInvalidArgument, "conv2d: ", problem, "; x ", x, ", filter ", filter);
  }
  return g;
}

Pool2dGeometry pool2d_geometry(const Shape& x, const Attrs& attrs) {
  Pool2dGeometry g;
  std::string problem = try_pool2d_geometry(x, attrs, &g);
  if (!problem.empty()) throw_error(ErrorCode::kInvalidArgument, "pool2d: ", problem, "; x ", x);
  return g;
}

Attrs fused_pool_attrs(const Attrs& fused) {
  return {{"ksize", fused.get_ints("pool_ksize")},
          {"strides", fused.get_ints("pool_strides")},
          {"padding", fused.get_string("pool_padding")}};
}

bool one_channel_pooled_conv(const Conv2dGeometry& g, const Pool2dGeometry& pool) {
  return g.c_in == 1 && g.groups == 1 && g.stride_h == 1 && g.stride_w == 1 && g.dil_h == 1 &&
         g.dil_w == 1 && g.kh == 3 && g.kw == 3 && pool.kh == 2 && pool.kw == 2 &&
         pool.stride_h == 2 && pool.stride_w == 2 && pool.pad_top == 0 && pool.pad_left == 0 &&
         2 * pool.out_h <= pool.h && 2 * pool.out_w <= pool.w;
}

}  // namespace tern::ops
