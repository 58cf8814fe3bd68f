// oneDNN conv2d and fused_conv2d forward: NHWC activations, the HWIO filter reordered each run
// into the blocked layout the primitive chose (the reorder primitive is built once; a constant
// filter, as in a served model, only at the first run: for Winograd the reorder is the filter
// transform, most of a batch-1 ResNet-18 call when it ran every time), groups
// (incl. depthwise) through grouped weight dims; fused_conv2d adds bias, residual (sum post-op)
// and activation (eltwise post-op; relu after the primitive, keeping NaN). Also the shared
// descriptor helpers of onednn_conv.h.
#include "tern/backends/cpu/onednn_conv.h"

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <string_view>

#include "tern/backends/cpu/cpu_isa.h"
#include "tern/backends/cpu/cpu_kernels.h"
#include "tern/backends/cpu/onednn_kernels.h"
#include "tern/ops/registry.h"

namespace tern::cpu {

namespace onednn {

ConvDescs conv_descs(const ops::Conv2dGeometry& g, DType dtype, bool with_bias) {
  ConvDescs d;
  d.geo = g;
  dnnl_dt dt = to_dnnl(dtype);
  d.src = dnnl::memory::desc({g.n, g.c_in, g.h, g.w}, dt, dnnl_tag::nhwc);
  d.dst = dnnl::memory::desc({g.n, g.c_out, g.out_h, g.out_w}, dt, dnnl_tag::nhwc);
  d.src_any = dnnl::memory::desc({g.n, g.c_in, g.h, g.w}, dt, dnnl_tag::any);
  d.dst_any = dnnl::memory::desc({g.n, g.c_out, g.out_h, g.out_w}, dt, dnnl_tag::any);
  // HWIO storage [kh, kw, cin_g, cout] with cout = group * cout_g + o.
  int64_t cin_g = g.c_in_per_group(), cout_g = g.c_out_per_group();
  int64_t s_kw = cin_g * g.c_out, s_kh = g.kw * s_kw;
  if (g.groups == 1) {
    dnnl_dims dims = {g.c_out, g.c_in, g.kh, g.kw};
    d.weights = dnnl::memory::desc(dims, dt, dnnl_dims{1, g.c_out, s_kh, s_kw});
    d.weights_any = dnnl::memory::desc(dims, dt, dnnl_tag::any);
  } else {
    dnnl_dims dims = {g.groups, cout_g, cin_g, g.kh, g.kw};
    d.weights = dnnl::memory::desc(dims, dt, dnnl_dims{cout_g, 1, g.c_out, s_kh, s_kw});
    d.weights_any = dnnl::memory::desc(dims, dt, dnnl_tag::any);
  }
  if (with_bias) d.bias = dnnl::memory::desc({g.c_out}, dt, dnnl_tag::a);
  d.strides = {g.stride_h, g.stride_w};
  d.dilates = {g.dil_h - 1, g.dil_w - 1};
  d.pad_l = {g.pad_top, g.pad_left};
  d.pad_r = {g.pad_bottom, g.pad_right};
  return d;
}

dnnl::convolution_forward::primitive_desc conv_forward_pd(const ConvDescs& d,
                                                          const dnnl::post_ops& ops) {
  dnnl::convolution_forward::desc desc(dnnl::prop_kind::forward_training, d.alg, primitive_src(d),
                                       d.weights_any, d.bias, primitive_dst(d), d.strides,
                                       d.dilates, d.pad_l, d.pad_r);
  return dnnl::convolution_forward::primitive_desc(desc, make_attr(ops), engine());
}

const dnnl::memory::desc& primitive_src(const ConvDescs& d) {
  return d.alg == dnnl::algorithm::convolution_winograd ? d.src_any : d.src;
}

const dnnl::memory::desc& primitive_dst(const ConvDescs& d) {
  return d.alg == dnnl::algorithm::convolution_winograd ? d.dst_any : d.dst;
}

void choose_conv_algorithm(ConvDescs& d, const std::function<size_t(const ConvDescs&)>& build) {
  static const bool enabled = [] {
    const char* v = std::getenv("TERN_ONEDNN_WINOGRAD");
    return v == nullptr || std::string_view(v) != "0";
  }();
  const ops::Conv2dGeometry& g = d.geo;
  d.alg = dnnl::algorithm::convolution_direct;
  if (!enabled || d.src.data_type() != dnnl_dt::f32 || g.kh != 3 || g.kw != 3 || g.stride_h != 1 ||
      g.stride_w != 1 || g.dil_h != 1 || g.dil_w != 1 || g.groups != 1 || g.c_in % 16 != 0 ||
      g.c_out % 16 != 0 || g.n * g.out_h * g.out_w < kWinogradMinOutputPixels) {
    return;
  }
  d.alg = dnnl::algorithm::convolution_winograd;
  size_t scratchpad = 0;
  if (!try_build([&] { scratchpad = build(d); }).empty() || scratchpad > kWinogradScratchpadLimit) {
    d.alg = dnnl::algorithm::convolution_direct;
  }
}

std::string conv_decline_common(const kernels::KernelSignature& sig) {
  for (const auto& t : sig.inputs) {
    if (std::string why = dtype_support(t.dtype); !why.empty()) return why;
  }
  return nonempty(sig);
}

}  // namespace onednn

namespace {

using namespace onednn;

// The forward convolution of geometry `g` (its batch may be a chunk of the signature's), with
// the algorithm chosen.
ConvDescs forward_descs(const ops::Conv2dGeometry& g, DType dtype, const Epilogue& ep) {
  ConvDescs d = conv_descs(g, dtype, ep.bias_input >= 0);
  dnnl::post_ops ops = epilogue_post_ops(ep);
  choose_conv_algorithm(
      d, [&](const ConvDescs& c) { return conv_forward_pd(c, ops).scratchpad_desc().get_size(); });
  return d;
}

ConvDescs forward_descs(const kernels::KernelSignature& sig, const Epilogue& ep) {
  return forward_descs(ops::conv2d_geometry(sig.inputs[0].shape, sig.inputs[1].shape, *sig.attrs),
                       sig.inputs[0].dtype, ep);
}

// One convolution primitive over a given batch, with its filter and activation reorders.
class ConvPrimitive {
 public:
  ConvPrimitive() = default;
  ConvPrimitive(const ConvDescs& d, const Epilogue& ep) {
    auto pd = conv_forward_pd(d, epilogue_post_ops(ep));
    // A residual with a blocked output (Winograd): added by the reorder back to nhwc (a sum
    // post-op there) instead of reordered into the blocked layout for the primitive's sum and
    // back. Where an activation other than relu follows, it must see the sum: the primitive's.
    // (Served ResNet-18 at batch 256, a 64-channel block's second convolution: 72 -> 55 ms.)
    if (ep.residual_input >= 0 && pd.dst_desc() != d.dst &&
        (ep.activation == ops::Activation::kNone || ep.activation == ops::Activation::kRelu)) {
      Epilogue no_sum = ep;
      no_sum.residual_input = -1;
      auto alone = conv_forward_pd(d, epilogue_post_ops(no_sum));
      if (alone.dst_desc() != d.dst) pd = alone, residual_in_reorder_ = true;
    }
    runner_.init<dnnl::convolution_forward>(pd);
    runner_.add_arg(DNNL_ARG_SRC, pd.src_desc());
    runner_.add_arg(DNNL_ARG_WEIGHTS, pd.weights_desc());
    runner_.add_arg(DNNL_ARG_DST, pd.dst_desc());
    if (ep.bias_input >= 0) runner_.add_arg(DNNL_ARG_BIAS, pd.bias_desc());
    weights_ = WeightsReorder(d.weights, pd.weights_desc(), /*from_user=*/true);
    src_ = ActivationReorder(d.src, pd.src_desc(), 0);
    dst_ = ActivationReorder(d.dst, pd.dst_desc(), 1, residual_in_reorder_);
  }

  // The filter in the primitive's layout for the runs that follow (a constant one reordered at
  // the first call only): once per kernel run, however many chunks the batch is split into.
  void prepare_filter(const void* filter, bool constant_filter) {
    runner_.set(DNNL_ARG_WEIGHTS, constant_filter ? weights_.to_primitive_kept(filter)
                                                  : weights_.to_primitive(filter));
  }

  // x (nhwc) -> out (nhwc, or the blocked layout the descs gave); `residual`: out already holds
  // the residual (sum post-op). After prepare_filter.
  void run(const void* x, const void* bias, void* out, bool residual) {
    void* dst = residual && !residual_in_reorder_ ? dst_.to_primitive(out) : dst_.buffer(out);
    runner_.set(DNNL_ARG_SRC, src_.to_primitive(x));
    if (bias) runner_.set(DNNL_ARG_BIAS, bias);
    runner_.set(DNNL_ARG_DST, dst);
    runner_.execute();
    dst_.to_user(out);
  }

 private:
  PrimitiveRunner runner_;
  WeightsReorder weights_;
  ActivationReorder src_, dst_;
  bool residual_in_reorder_ = false;  // dst_.to_user() adds the result to the residual in `out`
};

// fused_conv2d with pool = "max": the convolution's output goes to a buffer of the kernel's and
// is max-pooled from there into the output, in chunks of images:
//   - f32 convolutions that oneDNN runs in its nChw16c blocked layout anyway (Winograd) or runs
//     faster with a blocked output (a direct convolution of one input channel: the first layer
//     of an image model, 0.79 -> 0.49 ms at [256, 28, 28, 1] -> 32 channels on this CPU) write
//     that layout, and the pooling reads it and writes NHWC (max_pool2d_blocked16_to_nhwc): no
//     reorder of the full-size output (0.5 ms of the served CNN's second layer at batch 256);
//   - other convolutions write NHWC, pooled by the best max_pool2d kernel for the chunk.
// A direct convolution runs in chunks whose output fits in kPoolChunkBytes, pooled while in
// cache; Winograd runs the whole batch at once (its tile transforms cost more per chunk than the
// cache saves: the CNN's second layer in chunks of 33 images was 15% slower).
constexpr size_t kPoolChunkBytes = size_t{1} << 20;

class PooledChunks {
 public:
  PooledChunks(const kernels::KernelSignature& sig, const Epilogue& ep)
      : pool_attrs_(ops::fused_pool_attrs(*sig.attrs)) {
    const ops::Conv2dGeometry g =
        ops::conv2d_geometry(sig.inputs[0].shape, sig.inputs[1].shape, *sig.attrs);
    const DType dtype = sig.inputs[0].dtype;
    const size_t image_bytes = static_cast<size_t>(g.out_h * g.out_w * g.c_out) * dtype_size(dtype);
    ConvDescs full = forward_descs(g, dtype, ep);
    int64_t chunk = g.n;
    if (full.alg != dnnl::algorithm::convolution_winograd) {
      chunk = std::max<int64_t>(1, static_cast<int64_t>(kPoolChunkBytes / image_bytes));
    }
    chunk_ = std::min(chunk, g.n);
    in_image_bytes_ = static_cast<size_t>(g.h * g.w * g.c_in) * dtype_size(dtype);
    out_image_bytes_ =
        static_cast<size_t>(sig.outputs[0].shape.num_elements() / g.n) * dtype_size(dtype);
    buffer_ = AlignedBuffer(static_cast<size_t>(chunk_) * image_bytes);
    buffer_storage_ = Storage::wrap(buffer_.data(), buffer_.size());
    for (int64_t n : {chunk_, g.n % chunk_}) {
      if (n == 0) continue;
      ops::Conv2dGeometry cg = g;
      cg.n = n;
      parts_.push_back(make_part(cg, dtype, ep, sig.deterministic));
    }
  }

  void run(kernels::KernelContext& ctx, const Epilogue& ep, bool constant_filter) {
    const char* x = static_cast<const char*>(ctx.inputs[0].raw_data());
    char* y = static_cast<char*>(ctx.outputs[0].raw_data());
    const void* filter = ctx.inputs[1].raw_data();
    const void* bias = ep.bias_input >= 0 ? ctx.inputs[ep.bias_input].raw_data() : nullptr;
    const int64_t n = ctx.inputs[0].shape().dim(0);
    for (Part& part : parts_) part.conv.prepare_filter(filter, constant_filter);
    for (int64_t first = 0; first < n;) {
      Part& part = n - first >= chunk_ ? parts_[0] : parts_[1];
      part.conv.run(x + static_cast<size_t>(first) * in_image_bytes_, bias, buffer_.data(), false);
      if (part.blocked) {
        max_pool2d_blocked16_to_nhwc(
            part.pool_geometry, static_cast<const float*>(buffer_.data()),
            reinterpret_cast<float*>(y + static_cast<size_t>(first) * out_image_bytes_));
      } else {  // a view of the output at this chunk (the output's storage, no allocation)
        const Tensor& y_all = ctx.outputs[0];
        Tensor pooled(part.pooled.dtype, part.pooled.shape, y_all.storage(),
                      y_all.byte_offset() + static_cast<size_t>(first) * out_image_bytes_);
        kernels::KernelContext pool_ctx{std::span<const Tensor>(&part.conv_out_view, 1),
                                        std::span<Tensor>(&pooled, 1), pool_attrs_, ctx.stream};
        part.pool->run(pool_ctx);
      }
      first += part.images;
    }
  }

 private:
  struct Part {
    int64_t images = 0;
    bool blocked = false;  // the convolution writes nChw16c, pooled by the blocked loop
    ConvPrimitive conv;
    ops::Pool2dGeometry pool_geometry;
    TensorType conv_out, pooled;
    std::unique_ptr<kernels::Kernel> pool;  // NHWC: the max_pool2d kernel for the chunk
    Tensor conv_out_view;                   // NHWC: the chunk buffer as its input
  };

  // Whether the convolution of `d` writes the blocked layout for the pooling to read: f32, a
  // multiple of 16 output channels, pooling windows inside x that do not overlap, the vectorized
  // loop available, and oneDNN runs a blocked kernel for it (Winograd, or direct from one input
  // channel).
  bool use_blocked(ConvDescs& d, const ops::Pool2dGeometry& pg) const {
    const ops::Conv2dGeometry& g = d.geo;
    if (d.src.data_type() != dnnl_dt::f32 || g.c_out % 16 != 0 || cpu_isa() < CpuIsa::kX86_64_v3 ||
        pg.pad_top != 0 || pg.pad_left != 0 || pg.stride_h < pg.kh || pg.stride_w < pg.kw) {
      return false;
    }
    const bool winograd = d.alg == dnnl::algorithm::convolution_winograd;
    if (!winograd && g.c_in != 1) return false;
    const dnnl::memory::desc blocked({g.n, g.c_out, g.out_h, g.out_w}, dnnl_dt::f32,
                                     dnnl_tag::nChw16c);
    ConvDescs b = d;
    b.dst = blocked;
    b.dst_any = blocked;
    // One input channel: nhwc and nchw are the same bytes; oneDNN's blocked direct kernel takes
    // nchw.
    if (!winograd)
      b.src = dnnl::memory::desc({g.n, g.c_in, g.h, g.w}, dnnl_dt::f32, dnnl_tag::nchw);
    std::string impl;
    if (!try_build([&] { impl = conv_forward_pd(b, {}).impl_info_str(); }).empty() ||
        impl.find("ref") != std::string::npos || impl.find("gemm") != std::string::npos) {
      return false;
    }
    d = b;
    return true;
  }

  Part make_part(const ops::Conv2dGeometry& g, DType dtype, const Epilogue& ep,
                 bool deterministic) {
    Part part;
    part.images = g.n;
    ConvDescs d = forward_descs(g, dtype, ep);
    part.conv_out = TensorType{dtype, g.output_shape()};
    part.pool_geometry = ops::pool2d_geometry(g.output_shape(), pool_attrs_);
    part.pooled = TensorType{dtype, part.pool_geometry.output_shape()};
    part.blocked = use_blocked(d, part.pool_geometry);
    part.conv = ConvPrimitive(d, ep);
    if (!part.blocked) {
      kernels::KernelSignature ps{&ops::OpRegistry::global().get("max_pool2d"),
                                  &pool_attrs_,
                                  {part.conv_out},
                                  {part.pooled},
                                  DeviceType::kCPU,
                                  deterministic};
      kernels::KernelSelection chosen = kernels::KernelRegistry::global().select(ps);
      TERN_CHECK(chosen.kernel != nullptr, "no max_pool2d kernel for ", ps.to_string());
      part.pool = std::move(chosen.kernel);
      part.conv_out_view = Tensor(dtype, part.conv_out.shape, buffer_storage_);
    }
    return part;
  }

  ops::Attrs pool_attrs_;
  int64_t chunk_ = 1;
  size_t in_image_bytes_ = 0, out_image_bytes_ = 0;
  AlignedBuffer buffer_;
  std::shared_ptr<Storage> buffer_storage_;  // buffer_, for the NHWC pooling kernels' views
  std::vector<Part> parts_;                  // the full chunk, then the last, shorter one (if any)
};

class ConvForwardKernel {
 public:
  ConvForwardKernel(const kernels::KernelSignature& sig, Epilogue ep)
      : ep_(std::move(ep)), constant_filter_(sig.input_is_constant(1)) {
    guarded(str_cat("oneDNN ", sig.to_string()), [&] {
      const ops::Conv2dGeometry g =
          ops::conv2d_geometry(sig.inputs[0].shape, sig.inputs[1].shape, *sig.attrs);
      if (pooled(sig)) {
        chunks_ = std::make_unique<PooledChunks>(sig, ep_);
        return;
      }
      // tern's Winograd where it applies; small images as GEMMs, over the taps inside the image
      // where the padding holds many; where oneDNN declines the matmul, the convolution
      // primitive.
      if (winograd(sig, g)) return;
      if (!constant_filter_ && valid_taps_apply(g, sig.inputs[0].dtype) &&
          (ep_.activation == ops::Activation::kNone || ep_.activation == ops::Activation::kRelu) &&
          try_build([&] {
            valid_taps_ = std::make_unique<ValidTapsConv>(g, sig.inputs[0].dtype,
                                                          ValidTapsConv::Direction::kForward, ep_);
          }).empty()) {
        return;
      }
      if (!constant_filter_ && conv_gemm_applies(g, sig.inputs[0].dtype) &&
          try_build([&] {
            gemm_ = std::make_unique<ConvForwardGemm>(g, sig.inputs[0].dtype, ep_);
          }).empty()) {
        return;
      }
      conv_ = ConvPrimitive(forward_descs(sig, ep_), ep_);
    });
  }

  void run(kernels::KernelContext& ctx) {
    if (winograd_) {  // the epilogue in its output transform
      load_residual(ep_, ctx);
      winograd_->run(ctx.inputs[0].raw_data(), ctx.inputs[1].raw_data(), constant_filter_,
                     ep_.bias_input >= 0 ? ctx.inputs[ep_.bias_input].raw_data() : nullptr,
                     ctx.outputs[0].raw_data());
      return;
    }
    if (chunks_) {
      chunks_->run(ctx, ep_, constant_filter_);
    } else {
      load_residual(ep_, ctx);
      const void* bias = ep_.bias_input >= 0 ? ctx.inputs[ep_.bias_input].raw_data() : nullptr;
      if (valid_taps_) {
        valid_taps_->forward(ctx.inputs[0].raw_data(), ctx.inputs[1].raw_data(), bias,
                             ctx.outputs[0].raw_data());
      } else if (gemm_) {
        gemm_->run(ctx.inputs[0].raw_data(), ctx.inputs[1].raw_data(), bias,
                   ctx.outputs[0].raw_data());
      } else {
        conv_.prepare_filter(ctx.inputs[1].raw_data(), constant_filter_);
        conv_.run(ctx.inputs[0].raw_data(), bias, ctx.outputs[0].raw_data(),
                  ep_.residual_input >= 0);
      }
    }
    finish_epilogue(ep_, ctx);  // relu keeping NaN: after the pooling too (the two commute)
  }

  static bool pooled(const kernels::KernelSignature& sig) {
    return sig.attrs->has("pool") && sig.attrs->get_string("pool") == "max";
  }

 private:
  bool winograd(const kernels::KernelSignature& sig, const ops::Conv2dGeometry& g) {
    const DType dtype = sig.inputs[0].dtype;
    const int m = dtype == DType::kBF16 ? winograd_tile_bf16(g, constant_filter_)
                                        : winograd_tile(g, dtype, constant_filter_);
    if (m == 0 ||
        (ep_.activation != ops::Activation::kNone && ep_.activation != ops::Activation::kRelu)) {
      return false;
    }
    return try_build([&] {
             winograd_ =
                 std::make_unique<WinogradForward>(g, m, false, ep_, dtype, constant_filter_);
           })
        .empty();
  }

  Epilogue ep_;
  bool constant_filter_;
  std::unique_ptr<WinogradForward> winograd_;
  ConvPrimitive conv_;
  std::unique_ptr<ValidTapsConv> valid_taps_;  // small images, filter not constant
  std::unique_ptr<ConvForwardGemm> gemm_;      // small images, filter not constant
  std::unique_ptr<PooledChunks> chunks_;
};

void add_conv_forward_candidate(kernels::KernelRegistry& r, std::string_view op, bool fused) {
  auto epilogue = [fused](const kernels::KernelSignature& sig) {
    return fused ? fused_epilogue(*sig.attrs) : Epilogue{};
  };
  kernels::KernelCandidate c;
  c.name = "onednn";
  c.dtypes = {DType::kF32, DType::kBF16};
  c.priority = kOneDnnPriority;
  c.decline = [epilogue](const kernels::KernelSignature& sig) {
    Epilogue ep = epilogue(sig);
    if (std::string why = conv_decline_common(sig); !why.empty()) return why;
    if (std::string why = epilogue_support(sig, ep); !why.empty()) return why;
    if (ConvForwardKernel::pooled(sig) && ep.residual_input >= 0)
      return std::string("pool with a residual");
    if (sig.outputs.size() > 1) return std::string("the pooling's argmax");
    return try_build([&] { conv_forward_pd(forward_descs(sig, ep), epilogue_post_ops(ep)); });
  };
  c.create = [epilogue](const kernels::KernelSignature& sig) {
    return make_kernel<ConvForwardKernel>(sig, epilogue(sig));
  };
  r.add(op, std::move(c));
}

}  // namespace

void register_onednn_conv(kernels::KernelRegistry& r) {
  initialize_onednn();
  add_conv_forward_candidate(r, "conv2d", /*fused=*/false);
  add_conv_forward_candidate(r, "fused_conv2d", /*fused=*/true);
  register_onednn_conv_backward(r);
}

}  // namespace tern::cpu
