// Reference kernels for the fused ops. fused_elementwise interprets its program element by
// element in the compute type (and sums its output's columns in double, with column_sum).
// fused_matmul / fused_conv2d run the base op's own reference kernel on f64 copies of the inputs,
// then apply bias, residual and activation in f64 and round once.
#include <cmath>
#include <span>

#include "tern/kernels/ref/ref.h"
#include "tern/ops/conv_geometry.h"
#include "tern/ops/fused_program.h"
#include "tern/ops/fused_scalar.h"
#include "tern/ops/infer.h"
#include "tern/ops/registry.h"

namespace tern::kernels::ref {
namespace {

// fused_elementwise's column_sum output: y's stored values summed in double over every axis but
// the last, rounded once to the sum's dtype.
void column_sums_ref(const Tensor& y, Tensor& sums) {
  const int64_t n = sums.num_elements();
  std::vector<double> acc(static_cast<size_t>(n), 0.0);
  for (int64_t i = 0; i < y.num_elements(); ++i) acc[static_cast<size_t>(i % n)] += y.get(i);
  for (int64_t j = 0; j < n; ++j) sums.set(j, acc[static_cast<size_t>(j)]);
}

template <typename T>
void fused_elementwise_ref(KernelContext& ctx) {
  using C = compute_t<T>;
  Tensor& y = ctx.outputs[0];
  int num_inputs = static_cast<int>(ctx.inputs.size());
  ops::FusedProgram program;
  std::string problem = ops::decode_fused_program(ctx.attrs, num_inputs, &program);
  TERN_CHECK_ARG(problem.empty(), "fused_elementwise: ", problem);
  std::vector<BroadcastIndex> index;
  std::vector<const T*> in;
  for (const Tensor& t : ctx.inputs) {
    index.emplace_back(t.shape(), y.shape());
    in.push_back(t.data<T>());
  }
  std::vector<C> slot(static_cast<size_t>(program.num_slots()));
  T* out = y.data<T>();
  for (int64_t i = 0; i < y.num_elements(); ++i) {
    for (int k = 0; k < num_inputs; ++k) {
      slot[static_cast<size_t>(k)] =
          static_cast<C>(in[static_cast<size_t>(k)][index[static_cast<size_t>(k)](i)]);
    }
    size_t s = static_cast<size_t>(num_inputs);
    for (const ops::FusedInstruction& ins : program.code) {
      if (ins.op == ops::FusedOpcode::kImm) {
        slot[s++] = static_cast<C>(ins.imm);
        continue;
      }
      C a = slot[static_cast<size_t>(ins.a)];
      C b = ins.b >= 0 ? slot[static_cast<size_t>(ins.b)] : C(0);
      slot[s++] = ops::fused_scalar(ins.op, a, b);
    }
    out[i] = static_cast<T>(slot.back());
  }
  if (ctx.attrs.get_bool("column_sum")) column_sums_ref(y, ctx.outputs[1]);
}

// The base op's attributes (out_dtype too: the base runs in f64 and the result is rounded to the
// output's dtype).
ops::Attrs base_attrs(const ops::Attrs& fused) {
  ops::Attrs base = ops::fused_base_attrs(fused);
  ops::Attrs out;
  for (const auto& [name, value] : base.items()) {
    if (name != "out_dtype") out.set(name, value);
  }
  return out;
}

// Runs op `op_name`'s ref kernel on `inputs` as they are, into `outputs` (preallocated).
void run_ref_into(KernelRegistry& r, std::string_view op_name, const std::vector<Tensor>& inputs,
                  ops::Attrs attrs, std::span<Tensor> outputs) {
  const ops::OpDef& op = ops::OpRegistry::global().get(op_name);
  std::vector<TensorType> in_types;
  for (const Tensor& t : inputs) in_types.push_back(t.type());
  std::vector<TensorType> out_types = op.check_and_infer(op_name, in_types, attrs);
  KernelSignature sig{&op, &attrs, in_types, out_types, DeviceType::kCPU, true};
  for (const KernelCandidate* c : r.candidates(op_name, DeviceType::kCPU)) {
    if (!c->is_ref()) continue;
    std::unique_ptr<Kernel> kernel = c->create(sig);
    KernelContext kctx{inputs, outputs, attrs, host_stream()};
    kernel->run(kctx);
    return;
  }
  throw_error(ErrorCode::kNotFound, "fused ", op_name, ": no ref kernel");
}

// Runs `op`'s reference kernel on f64 copies of `inputs`; returns its (first) f64 output.
Tensor run_ref_f64(KernelRegistry& r, std::string_view op_name, const std::vector<Tensor>& inputs,
                   ops::Attrs attrs) {
  const ops::OpDef& op = ops::OpRegistry::global().get(op_name);
  std::vector<Tensor> in64;
  std::vector<TensorType> in_types;
  for (const Tensor& t : inputs) {
    in64.push_back(t.cast(DType::kF64));
    in_types.push_back(in64.back().type());
  }
  std::vector<TensorType> out_types = op.check_and_infer(op_name, in_types, attrs);
  std::vector<Tensor> out{Tensor(DType::kF64, out_types[0].shape)};
  run_ref_into(r, op_name, in64, std::move(attrs), out);
  return out[0];
}

// act(base + bias + residual) in f64, base's shape.
Tensor epilogue_f64(const KernelContext& ctx, const Tensor& base) {
  const ops::Activation act = *ops::parse_activation(ctx.attrs.get_string("activation"));
  bool has_bias = ctx.attrs.get_bool("has_bias"), has_residual = ctx.attrs.get_bool("has_residual");
  const Tensor* bias = has_bias ? &ctx.inputs[2] : nullptr;
  const Tensor* residual = has_residual ? &ctx.inputs[has_bias ? 3 : 2] : nullptr;
  int64_t channels = base.rank() > 0 ? base.shape().dim(base.rank() - 1) : 1;
  Tensor z(DType::kF64, base.shape());
  const double* in = base.data<double>();
  double* out = z.data<double>();
  for (int64_t i = 0; i < z.num_elements(); ++i) {
    double v = in[i];
    if (bias) v += bias->get(i % channels);
    if (residual) v += residual->get(i);
    out[i] = ops::activation_scalar(act, v);
  }
  return z;
}

template <typename T>
void round_into(const Tensor& z, Tensor& y) {
  const double* in = z.data<double>();
  T* out = y.data<T>();
  for (int64_t i = 0; i < y.num_elements(); ++i) {
    out[i] = static_cast<T>(static_cast<compute_t<T>>(in[i]));
  }
}

void fused_base_ref(KernelRegistry& r, std::string_view base_op, KernelContext& ctx) {
  Tensor base = run_ref_f64(r, base_op, {ctx.inputs[0], ctx.inputs[1]}, base_attrs(ctx.attrs));
  Tensor z = epilogue_f64(ctx, base);
  // fused_conv2d's pool: max pooling of the f64 values (rounding after it is the same as before:
  // the maximum of rounded values is the rounded maximum).
  const std::string pool = ctx.attrs.has("pool") ? ctx.attrs.get_string("pool") : "none";
  if (pool == "max") {
    z = run_ref_f64(r, "max_pool2d", {z}, ops::fused_pool_attrs(ctx.attrs));
  }
  Tensor& y = ctx.outputs[0];
  if (pool == "max_argmax") {
    // The convolution rounded to y's dtype, then max_pool2d_argmax's ref on it: the positions
    // the unfused pair finds (ties and near-ties decided on the rounded values).
    Tensor conv(y.dtype(), z.shape());
    dispatch_float(y.dtype(), base_op, [&](auto tag) { round_into<decltype(tag)>(z, conv); });
    run_ref_into(r, "max_pool2d_argmax", {conv}, ops::fused_pool_attrs(ctx.attrs), ctx.outputs);
    return;
  }
  dispatch_float(y.dtype(), base_op, [&](auto tag) { round_into<decltype(tag)>(z, y); });
}

}  // namespace

void register_fused_ref(KernelRegistry& r) {
  add_ref(r, "fused_elementwise", ops::kFloatDTypes, [](KernelContext& ctx) {
    dispatch_float(ctx.outputs[0].dtype(), "fused_elementwise",
                   [&](auto tag) { fused_elementwise_ref<decltype(tag)>(ctx); });
  });
  add_ref(r, "fused_matmul", ops::kFloatDTypes,
          [&r](KernelContext& ctx) { fused_base_ref(r, "matmul", ctx); });
  add_ref(r, "fused_conv2d", ops::kFloatDTypes,
          [&r](KernelContext& ctx) { fused_base_ref(r, "conv2d", ctx); });
}

}  // namespace tern::kernels::ref
