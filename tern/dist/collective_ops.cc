// The collective ops of a data-parallel step and their CPU kernels. They live here, not in
// tern/ops, because their kernels need a live GradientReducer (this module's); graphs that use
// them are built by tern/train only when training is distributed.
//
//   all_reduce_start  g... (a bucket's gradients, f32/f64)  -> bool scalar token
//                     copies any gradient not already in the bucket buffer into it, then hands
//                     the bucket to the communication thread. attrs: group (the reducer's id),
//                     bucket. Scheduled as early as its inputs allow.
//   all_reduce_wait   token, g...  -> the summed gradients (same types), views of the buffer
//                     blocks until the bucket is reduced. Scheduled as late as its readers allow.
#include <cstring>
#include <mutex>

#include "tern/dist/gradient_reducer.h"
#include "tern/kernels/kernel.h"
#include "tern/ops/registry.h"

namespace tern::dist {
namespace {

using kernels::Kernel;
using kernels::KernelCandidate;
using kernels::KernelContext;
using kernels::KernelSignature;

GradientReducer& reducer_of(const KernelSignature& sig) {
  const int64_t id = sig.attrs->get_int("group");
  GradientReducer* r = find_reducer(id);
  if (r == nullptr) {
    throw_error(ErrorCode::kFailedPrecondition, sig.op->name, ": gradient reducer ", id,
                " does not exist (the step graph outlived its data-parallel context)");
  }
  return *r;
}

// A no-op when the producing kernel already wrote into the bucket (the pinned case).
void copy_if_elsewhere(const void* from, void* to, size_t bytes) {
  if (from != to) std::memcpy(to, from, bytes);
}

class StartKernel final : public Kernel {
 public:
  explicit StartKernel(const KernelSignature& sig)
      : reducer_(reducer_of(sig)), bucket_(static_cast<int>(sig.attrs->get_int("bucket"))) {}
  void run(KernelContext& ctx) override {
    const Bucket& b = reducer_.buckets().at(static_cast<size_t>(bucket_));
    for (size_t i = 0; i < ctx.inputs.size(); ++i) {
      copy_if_elsewhere(ctx.inputs[i].raw_data(), reducer_.data_of(b.members[i]),
                        ctx.inputs[i].nbytes());
    }
    reducer_.start(bucket_);
    ctx.outputs[0].data<bool>()[0] = true;
  }

 private:
  GradientReducer& reducer_;
  int bucket_;
};

class WaitKernel final : public Kernel {
 public:
  explicit WaitKernel(const KernelSignature& sig)
      : reducer_(reducer_of(sig)), bucket_(static_cast<int>(sig.attrs->get_int("bucket"))) {}
  void run(KernelContext& ctx) override {
    reducer_.wait(bucket_);
    const Bucket& b = reducer_.buckets().at(static_cast<size_t>(bucket_));
    for (size_t i = 0; i < ctx.outputs.size(); ++i) {
      copy_if_elsewhere(reducer_.data_of(b.members[i]), ctx.outputs[i].raw_data(),
                        ctx.outputs[i].nbytes());
    }
  }

 private:
  GradientReducer& reducer_;
  int bucket_;
};

std::vector<TensorType> infer_start(const ops::InferContext& ctx) {
  for (size_t i = 1; i < ctx.inputs.size(); ++i) {
    if (ctx.input(i).dtype != ctx.input(0).dtype) {
      ctx.fail("input ", i, " is ", dtype_name(ctx.input(i).dtype), " but input 0 is ",
               dtype_name(ctx.input(0).dtype), " (a bucket holds one dtype)");
    }
  }
  return {TensorType{DType::kBool, Shape{}}};
}

std::vector<TensorType> infer_wait(const ops::InferContext& ctx) {
  if (ctx.input(0).dtype != DType::kBool || ctx.input(0).shape.rank() != 0) {
    ctx.fail("input 0 must be the bool token of all_reduce_start, got ", ctx.input(0).to_string());
  }
  return std::vector<TensorType>(ctx.inputs.begin() + 1, ctx.inputs.end());
}

}  // namespace

Tensor bucket_operand(const ir::Node& node, bool is_output, int index) {
  const bool start = node.op_name() == "all_reduce_start";
  if (!start && node.op_name() != "all_reduce_wait") return {};
  if (start && is_output) return {};  // the token
  const int slot = start || is_output ? index : index - 1;
  if (slot < 0) return {};  // the wait's token input
  GradientReducer* r = find_reducer(node.attrs().get_int("group"));
  if (r == nullptr) return {};
  const Bucket& b = r->buckets().at(static_cast<size_t>(node.attrs().get_int("bucket")));
  return r->view(b.members.at(static_cast<size_t>(slot)));
}

void register_collective_ops() {
  static std::once_flag once;
  std::call_once(once, [] {
    const std::vector<ops::AttrSpec> attrs = {{"group", ops::AttrKind::kInt, std::nullopt},
                                              {"bucket", ops::AttrKind::kInt, std::nullopt}};
    const uint32_t traits = ops::kTraitStateful | ops::kTraitNotDifferentiable;
    ops::OpRegistry& r = ops::OpRegistry::global();
    r.add({.name = "all_reduce_start",
           .family = "collective",
           .doc = "Hands a bucket of gradients to the data-parallel all-reduce; returns a token.",
           .inputs = {"g"},
           .variadic = true,
           .min_inputs = 1,
           .attrs = attrs,
           .dtypes = {DType::kF32, DType::kF64},
           .traits = traits | ops::kTraitScheduleEarly,
           .infer = infer_start});
    r.add({.name = "all_reduce_wait",
           .family = "collective",
           .doc = "Waits for a bucket's all-reduce; returns the summed gradients.",
           .inputs = {"token", "g"},
           .variadic = true,
           .min_inputs = 2,
           .attrs = attrs,
           .dtypes = {DType::kF32, DType::kF64},
           .key_input = 1,
           .traits = traits | ops::kTraitScheduleLate,
           .infer = infer_wait});
    kernels::KernelRegistry& k = kernels::KernelRegistry::global();
    k.add("all_reduce_start",
          KernelCandidate{.name = "mpi",
                          .device = DeviceType::kCPU,
                          .dtypes = {DType::kF32, DType::kF64},
                          .priority = 10,
                          .create = [](const KernelSignature& sig) -> std::unique_ptr<Kernel> {
                            return std::make_unique<StartKernel>(sig);
                          }});
    k.add("all_reduce_wait",
          KernelCandidate{.name = "mpi",
                          .device = DeviceType::kCPU,
                          .dtypes = {DType::kF32, DType::kF64},
                          .priority = 10,
                          .create = [](const KernelSignature& sig) -> std::unique_ptr<Kernel> {
                            return std::make_unique<WaitKernel>(sig);
                          }});
  });
}

}  // namespace tern::dist
