// A 3x3 convolution trained under a 2x2 max pooling, on tern's fused F(4x4, 3x3) Winograd
// (candidate "winograd"; onednn_conv_winograd.cc) without the convolution-sized tensors: the
// forward (fused_conv2d with pool = "max_argmax") pools each output tile as it leaves the GEMMs
// and writes the pooled values and argmax, and the gradients (conv2d_backprop_input_pooled,
// conv2d_backprop_filter_pooled) expand each dy tile from the pooled dy and argmax as they read
// it. The pass pool_argmax forms these ops only where these kernels take them
// (PipelineOptions::fast_kernel), so a layer tern's Winograd does not take keeps its
// convolution-sized output, max_pool2d_argmax and max_pool2d_grad_argmax. Results are bitwise
// those of the unfused nodes on the same Winograd (same tiles, same order of sums).
#include <functional>
#include <memory>
#include <string>

#include "tern/backends/cpu/cpu_isa.h"
#include "tern/backends/cpu/cpu_kernels.h"
#include "tern/backends/cpu/onednn_conv.h"
#include "tern/backends/cpu/pooled_conv.h"
#include "tern/kernels/index_check.h"

TERN_CPU_V3_BEGIN  // the code below is x86-64-v3 (cpu_isa.h)

namespace tern::cpu {
namespace {

using kernels::KernelContext;
using kernels::KernelSignature;
using onednn::PooledGradient;
using onednn::PooledOutput;

// "" if the pooling is one these kernels read or write (2x2 at stride 2, no padding, every window
// inside the convolution's output) and every tensor is f32; else why not.
std::string decline_pooling(const KernelSignature& sig, const ops::Pool2dGeometry& p) {
  for (const TensorType& t : sig.inputs) {
    if (t.dtype != DType::kF32 && t.dtype != DType::kU8) return "f32 only";
  }
  for (const TensorType& t : sig.outputs) {
    if (t.dtype != DType::kF32 && t.dtype != DType::kU8) return "f32 only";
  }
  if (!pool_2x2_stride_2(p) || 2 * p.out_h > p.h || 2 * p.out_w > p.w) {
    return "not a 2x2 max pooling at stride 2 with its windows inside the convolution's output";
  }
  if (p.n == 0 || p.c == 0 || p.out_h == 0 || p.out_w == 0) return "empty";
  return "";
}

// tern's F(4x4, 3x3) Winograd runs `g` fused per block of tiles (the form that reads and writes
// pooled tiles) on this CPU.
std::string decline_winograd(const ops::Conv2dGeometry& g) {
  if (onednn::winograd_tile(g, DType::kF32) != 4 || !cpu_runs_v4_variants() ||
      !onednn::winograd_fused(g, 4)) {
    return "tern's fused F(4x4, 3x3) Winograd does not take the convolution";
  }
  return "";
}

// --- forward: fused_conv2d(x, filter[, bias]){pool = "max_argmax"} -> (pooled, argmax) ---

std::string decline_forward(const KernelSignature& sig, PooledConvGeometry* geo) {
  if (std::string why = decline_pooled_conv(sig, geo, /*argmax_ok=*/true); !why.empty()) return why;
  if (!geo->argmax) return "no argmax output (pool = \"max\" runs on the served kernels)";
  if (sig.input_is_constant(1)) return "a constant filter (a served model)";
  if (std::string why = decline_pooling(sig, geo->pool); !why.empty()) return why;
  return decline_winograd(geo->conv);
}

class PooledForwardKernel final : public kernels::Kernel {
 public:
  PooledForwardKernel(const PooledConvGeometry& geo, bool bias)
      : pool_(geo.pool), bias_(bias), winograd_(geo.conv, 4, false, onednn::Epilogue{}) {
    TERN_CHECK(winograd_.pools_tiles(), "winograd: the forward does not pool its tiles");
  }

  void run(KernelContext& ctx) override {
    const PooledOutput out{pool_, ctx.outputs[0].data<float>(), ctx.outputs[1].data<uint8_t>()};
    winograd_.run_pooled(ctx.inputs[0].raw_data(), ctx.inputs[1].raw_data(),
                         bias_ ? ctx.inputs[2].raw_data() : nullptr, out);
  }

 private:
  ops::Pool2dGeometry pool_;
  bool bias_;
  onednn::WinogradForward winograd_;
};

// --- the gradients: their convolution and pooling from the op's attributes ---

struct GradientGeometry {
  ops::Conv2dGeometry conv;
  ops::Pool2dGeometry pool;
};

GradientGeometry gradient_geometry(const KernelSignature& sig, bool input_gradient) {
  const ops::Attrs& a = *sig.attrs;
  GradientGeometry geo;
  geo.conv = input_gradient
                 ? ops::conv2d_geometry(Shape(a.get_ints("input_shape")), sig.inputs[1].shape, a)
                 : ops::conv2d_geometry(sig.inputs[0].shape, Shape(a.get_ints("filter_shape")), a);
  geo.pool = ops::pool2d_geometry(geo.conv.output_shape(), ops::fused_pool_attrs(a));
  return geo;
}

// A run's placed flag: an argmax that named no position of its window is an InvalidArgument
// naming the first such one (check_pool_argmax), as ref's check.
void check_placed(bool placed, const ops::Pool2dGeometry& pool, const uint8_t* argmax,
                  std::string_view op) {
  if (placed) return;
  kernels::check_pool_argmax(pool, argmax, op);
  throw_error(ErrorCode::kInternal, op, ": an argmax matched no position");
}

// tern's fused adjoint input gradient (WinogradInputGradient's form that reads pooled tiles, not
// per block of channels) runs `g` on this CPU.
std::string decline_adjoint(const ops::Conv2dGeometry& g) {
  if (!onednn::WinogradInputGradient::applies(g, DType::kF32) || onednn::winograd_columns(g)) {
    return "tern's fused Winograd input gradient does not take the convolution";
  }
  return "";
}

// conv2d_backprop_input_pooled(dy, filter, argmax){input_shape}: the adjoint of the forward's
// tiles (WinogradInputGradient), its fused form.
std::string decline_input_gradient(const KernelSignature& sig) {
  const GradientGeometry geo = gradient_geometry(sig, true);
  if (std::string why = decline_pooling(sig, geo.pool); !why.empty()) return why;
  return decline_adjoint(geo.conv);
}

class PooledInputGradientKernel final : public kernels::Kernel {
 public:
  explicit PooledInputGradientKernel(const GradientGeometry& geo)
      : pool_(geo.pool), winograd_(geo.conv) {
    TERN_CHECK(winograd_.reads_pooled(), "winograd: the input gradient does not read pooled tiles");
  }

  void run(KernelContext& ctx) override {
    const uint8_t* argmax = ctx.inputs[2].data<uint8_t>();
    const PooledGradient dy{pool_, ctx.inputs[0].data<float>(), argmax};
    check_placed(winograd_.run_pooled(dy, ctx.inputs[1].raw_data(), ctx.outputs[0].raw_data()),
                 pool_, argmax, "conv2d_backprop_input_pooled");
  }

 private:
  ops::Pool2dGeometry pool_;
  onednn::WinogradInputGradient winograd_;
};

// conv2d_backprop_filter_pooled(x, dy, argmax){filter_shape}: the fused filter gradient, an f32
// result.
std::string decline_filter_gradient(const KernelSignature& sig) {
  const GradientGeometry geo = gradient_geometry(sig, false);
  if (std::string why = decline_pooling(sig, geo.pool); !why.empty()) return why;
  return decline_winograd(geo.conv);
}

class PooledFilterGradientKernel final : public kernels::Kernel {
 public:
  explicit PooledFilterGradientKernel(const GradientGeometry& geo)
      : pool_(geo.pool), winograd_(geo.conv, 4) {
    TERN_CHECK(winograd_.reads_pooled(),
               "winograd: the filter gradient does not read pooled tiles");
  }

  void run(KernelContext& ctx) override {
    const uint8_t* argmax = ctx.inputs[2].data<uint8_t>();
    const PooledGradient dy{pool_, ctx.inputs[1].data<float>(), argmax};
    check_placed(winograd_.run_pooled(ctx.inputs[0].raw_data(), dy, ctx.outputs[0].raw_data()),
                 pool_, argmax, "conv2d_backprop_filter_pooled");
  }

 private:
  ops::Pool2dGeometry pool_;
  onednn::WinogradFilterGradient winograd_;
};

// conv2d_backprop_pooled(x, dy, filter, argmax): both gradients in one pass over the tiles
// (WinogradPooledGradients), where both fused kernels above take the layer and the filter
// gradient's halves of blocks fall between images.
std::string decline_gradients(const KernelSignature& sig, GradientGeometry* geo) {
  const ops::Attrs& a = *sig.attrs;
  geo->conv = ops::conv2d_geometry(sig.inputs[0].shape, sig.inputs[2].shape, a);
  geo->pool = ops::pool2d_geometry(geo->conv.output_shape(), ops::fused_pool_attrs(a));
  if (std::string why = decline_pooling(sig, geo->pool); !why.empty()) return why;
  if (std::string why = decline_winograd(geo->conv); !why.empty()) return why;
  if (std::string why = decline_adjoint(geo->conv); !why.empty()) return why;
  if (!onednn::pooled_gradients_split(geo->conv)) {
    return "the filter gradient's halves of tiles split an image";
  }
  return "";
}

class PooledGradientsKernel final : public kernels::Kernel {
 public:
  explicit PooledGradientsKernel(const GradientGeometry& geo)
      : pool_(geo.pool), winograd_(geo.conv) {}

  void run(KernelContext& ctx) override {
    const uint8_t* argmax = ctx.inputs[3].data<uint8_t>();
    const PooledGradient dy{pool_, ctx.inputs[1].data<float>(), argmax};
    check_placed(winograd_.run(ctx.inputs[0].raw_data(), dy, ctx.inputs[2].raw_data(),
                               ctx.outputs[0].raw_data(), ctx.outputs[1].raw_data()),
                 pool_, argmax, "conv2d_backprop_pooled");
  }

 private:
  ops::Pool2dGeometry pool_;
  onednn::WinogradPooledGradients winograd_;
};

// The "winograd" candidate of `op`: ranked ahead of oneDNN's kernels (the one-channel kernels,
// kOneDnnPriority + 5, decline what this takes), f32, taking what `decline` accepts.
kernels::KernelCandidate candidate(
    std::function<std::string(const KernelSignature&)> decline,
    std::function<std::unique_ptr<kernels::Kernel>(const KernelSignature&)> make) {
  kernels::KernelCandidate c;
  c.name = "winograd";
  c.dtypes = {DType::kF32};
  c.priority = kOneDnnPriority + 4;
  c.decline = decline;
  c.create = [decline, make](const KernelSignature& sig) -> std::unique_ptr<kernels::Kernel> {
    if (std::string why = decline(sig); !why.empty()) {
      throw_error(ErrorCode::kInternal, "winograd ", sig.to_string(), ": ", why);
    }
    return make(sig);
  };
  return c;
}

}  // namespace

// Registered where the CPU runs AVX-512 (the fused Winograd runs only there).
// TERN_POOLED_WINOGRAD=0 leaves the ops without these kernels, so the passes do not form them
// for such layers (which then write their convolution-sized output and gradient, as before).
void register_pooled_winograd_kernels(kernels::KernelRegistry& r) {
  if (!cpu_runs_v4_variants() ||
      !env_switch("TERN_POOLED_WINOGRAD", "Winograd layers fused with their pooling",
                  "the convolution-sized output and gradient")) {
    return;
  }
  r.add("fused_conv2d", candidate(
                            [](const KernelSignature& sig) {
                              PooledConvGeometry geo;
                              return decline_forward(sig, &geo);
                            },
                            [](const KernelSignature& sig) {
                              PooledConvGeometry geo;
                              decline_forward(sig, &geo);
                              return std::make_unique<PooledForwardKernel>(
                                  geo, sig.attrs->get_bool("has_bias"));
                            }));
  r.add("conv2d_backprop_input_pooled",
        candidate(decline_input_gradient, [](const KernelSignature& sig) {
          return std::make_unique<PooledInputGradientKernel>(gradient_geometry(sig, true));
        }));
  r.add("conv2d_backprop_filter_pooled",
        candidate(decline_filter_gradient, [](const KernelSignature& sig) {
          return std::make_unique<PooledFilterGradientKernel>(gradient_geometry(sig, false));
        }));
  r.add("conv2d_backprop_pooled", candidate(
                                      [](const KernelSignature& sig) {
                                        GradientGeometry geo;
                                        return decline_gradients(sig, &geo);
                                      },
                                      [](const KernelSignature& sig) {
                                        GradientGeometry geo;
                                        decline_gradients(sig, &geo);
                                        return std::make_unique<PooledGradientsKernel>(geo);
                                      }));
}

}  // namespace tern::cpu

TERN_CPU_V3_END
