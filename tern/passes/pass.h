// Pass and PassPipeline. A pass rewrites a graph in place and reports whether it changed anything.
// The pipeline runs the verifier after every pass; TERN_VERBOSE=passes prints, per pass, the time
// taken and how the count of each op changed ("-3 add, +1 fused_elementwise"); TERN_VERBOSE=graph
// prints the graph the pipeline hands on, in the text IR (what runs, node by node).
//
// Passes depend only on ir and ops. Anything that needs kernels (constant folding evaluates
// nodes) receives a NodeEvaluator from the runtime instead of linking kernels itself.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "tern/ir/graph.h"

namespace tern::passes {

class Pass {
 public:
  virtual ~Pass() = default;
  virtual std::string name() const = 0;
  // Returns true if the graph changed.
  virtual bool run(ir::Graph& g) = 0;
};

struct PassStats {
  std::string pass;
  bool changed = false;
  size_t nodes_before = 0;
  size_t nodes_after = 0;
  double milliseconds = 0;
  std::string op_changes;  // "-3 add, +1 fused_elementwise" ("" if the op counts are unchanged)
};

class PassPipeline {
 public:
  PassPipeline& add(std::unique_ptr<Pass> pass);
  // Runs each pass once in order, verifying after each; returns per-pass statistics.
  std::vector<PassStats> run(ir::Graph& g) const;
  std::vector<std::string> names() const;

 private:
  std::vector<std::unique_ptr<Pass>> passes_;
};

// Computes a node's outputs from its input values (the node's attributes and types are on the
// node). The runtime builds one from its kernels; it throws tern::Error when it cannot.
using NodeEvaluator =
    std::function<std::vector<Tensor>(const ir::Node& node, const std::vector<Tensor>& inputs)>;

// Whether the device has a kernel other than ref that takes a node of `op` with these attributes
// and input and output types. The runtime answers from its kernel registry.
using KernelQuery = std::function<bool(const std::string& op, const ops::Attrs& attrs,
                                       const std::vector<TensorType>& inputs,
                                       const std::vector<TensorType>& outputs)>;

struct PipelineOptions {
  bool deterministic = false;         // drop passes that may change bits
  std::vector<std::string> disabled;  // pass names to skip
  // Enables const_fold; without one constant folding is skipped.
  NodeEvaluator evaluator;
  // The device computes bf16 matmuls as f32 ones on widened operands: widen_contractions runs
  // last, writing that widening into the graph.
  bool widen_bf16_contractions = false;
  // The device has fast kernels for max_pool2d_argmax and max_pool2d_grad_argmax: pool_argmax
  // runs (before fuse_epilogue).
  bool pool_argmax = false;
  // Asked by pool_argmax and fuse_epilogue before they form a layer's pooled ops
  // (conv2d_backprop_filter_pooled, conv2d_backprop_input_pooled, fused_conv2d with
  // pool = "max_argmax"): each is formed only where the device has a kernel that takes it (on the
  // CPU: the one-channel first layer's kernels, and tern's fused Winograd for layers of several
  // channels). Unset: never.
  KernelQuery fast_kernel;
};

// The standard optimization pipeline used by Executable::compile:
//   simplify, fold_batch_norm and const_fold (with an evaluator), cse, dce, fuse_norm_activation,
//   pool_argmax (where the options ask for it), fuse_dropout_residual, fuse_epilogue,
//   fuse_elementwise, fuse_column_sum, dce; then widen_contractions where the options ask for it.
// Deterministic mode keeps only rewrites that provably compute the same bits: simplify in its
// bit-exact form, const_fold (the evaluator runs the same deterministic kernels), cse and dce;
// the fusions change how float math is evaluated and are left out.
PassPipeline default_pipeline(const PipelineOptions& options = {});

// What runtime::fold_frozen_variables runs once on a graph whose weights became constants, before
// the graph is rebatched and compiled: fold_batch_norm (not deterministic), const_fold (with an
// evaluator) leaving broadcast_to alone (rebatch rewrites the batch dim a broadcast_to creates;
// a constant would keep the old one), dce.
PassPipeline frozen_weights_pipeline(const PipelineOptions& options);

}  // namespace tern::passes
