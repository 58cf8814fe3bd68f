// PassPipeline and the default pipeline.
#include "tern/passes/pass.h"

#include <algorithm>
#include <chrono>
#include <map>

#include "tern/base/logging.h"
#include "tern/ir/printer.h"
#include "tern/ir/verifier.h"
#include "tern/passes/const_fold.h"
#include "tern/passes/cse.h"
#include "tern/passes/dce.h"
#include "tern/passes/fold_batch_norm.h"
#include "tern/passes/fuse_dropout_residual.h"
#include "tern/passes/fuse_elementwise.h"
#include "tern/passes/fuse_epilogue.h"
#include "tern/passes/fuse_norm_activation.h"
#include "tern/passes/pool_argmax.h"
#include "tern/passes/simplify.h"
#include "tern/passes/widen_contractions.h"

namespace tern::passes {
namespace {

std::map<std::string, int> op_counts(const ir::Graph& g) {
  std::map<std::string, int> counts;
  for (const ir::Node* n : g.nodes()) ++counts[n->op_name()];
  return counts;
}

// "-3 add, +1 fused_elementwise": removed ops first, then added ones, each by name.
std::string op_changes(const std::map<std::string, int>& before,
                       const std::map<std::string, int>& after) {
  std::string removed, added;
  std::map<std::string, int> all = before;
  for (const auto& [op, n] : after) all.emplace(op, 0);
  for (const auto& [op, _] : all) {
    auto b = before.find(op), a = after.find(op);
    int delta = (a == after.end() ? 0 : a->second) - (b == before.end() ? 0 : b->second);
    if (delta < 0) removed += str_cat(removed.empty() ? "" : ", ", delta, " ", op);
    if (delta > 0) added += str_cat(added.empty() ? "" : ", ", "+", delta, " ", op);
  }
  if (removed.empty()) return added;
  return added.empty() ? removed : str_cat(removed, ", ", added);
}

}  // namespace

PassPipeline& PassPipeline::add(std::unique_ptr<Pass> pass) {
  passes_.push_back(std::move(pass));
  return *this;
}

std::vector<PassStats> PassPipeline::run(ir::Graph& g) const {
  std::vector<PassStats> stats;
  ir::verify(g, "input to pass pipeline");
  for (const auto& p : passes_) {
    PassStats s;
    s.pass = p->name();
    s.nodes_before = g.num_nodes();
    std::map<std::string, int> before = op_counts(g);
    auto t0 = std::chrono::steady_clock::now();
    s.changed = p->run(g);
    s.milliseconds =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    s.nodes_after = g.num_nodes();
    ir::verify(g, p->name());
    if (s.changed) s.op_changes = op_changes(before, op_counts(g));
    log_verbose("passes", p->name(), ": ", s.changed ? "changed" : "no change", ", nodes ",
                s.nodes_before, " -> ", s.nodes_after, s.op_changes.empty() ? "" : " (",
                s.op_changes, s.op_changes.empty() ? "" : ")", ", ", s.milliseconds, " ms");
    stats.push_back(s);
  }
  log_verbose("graph", "after the pass pipeline:\n", ir::print_graph(g));
  return stats;
}

std::vector<std::string> PassPipeline::names() const {
  std::vector<std::string> out;
  for (const auto& p : passes_) out.push_back(p->name());
  return out;
}

namespace {

// Adds `pass` to `p` unless `options` disables it by name.
void add_enabled(PassPipeline& p, const PipelineOptions& options, std::unique_ptr<Pass> pass) {
  const std::vector<std::string>& off = options.disabled;
  if (std::find(off.begin(), off.end(), pass->name()) == off.end()) p.add(std::move(pass));
}

}  // namespace

PassPipeline default_pipeline(const PipelineOptions& options) {
  PassPipeline p;
  auto add = [&](std::unique_ptr<Pass> pass) { add_enabled(p, options, std::move(pass)); };
  add(std::make_unique<Simplify>(options.deterministic));
  if (options.evaluator) {
    // Folding a batch norm into its weights is worth it only when const_fold computes the new
    // weights once (and it changes bits, so not in deterministic pipelines).
    if (!options.deterministic) add(std::make_unique<FoldBatchNorm>());
    add(std::make_unique<ConstFold>(options.evaluator));
  }
  add(std::make_unique<Cse>());
  add(std::make_unique<Dce>());
  if (!options.deterministic) {
    add(std::make_unique<FuseNormActivation>());
    if (options.pool_argmax) {
      add(std::make_unique<PoolArgmax>(options.fast_kernel));
    }
    add(std::make_unique<FuseDropoutResidual>());
    add(std::make_unique<FuseEpilogue>(options.pool_argmax ? options.fast_kernel : KernelQuery{}));
    add(std::make_unique<FuseElementwise>());
    add(std::make_unique<FuseColumnSum>());
    add(std::make_unique<Dce>());
  }
  // Same bits as the kernels that widen their own operands: in deterministic pipelines too.
  if (options.widen_bf16_contractions) add(std::make_unique<WidenContractions>());
  return p;
}

PassPipeline frozen_weights_pipeline(const PipelineOptions& options) {
  PassPipeline p;
  auto add = [&](std::unique_ptr<Pass> pass) { add_enabled(p, options, std::move(pass)); };
  if (!options.deterministic) add(std::make_unique<FoldBatchNorm>());
  if (options.evaluator) {
    add(std::make_unique<ConstFold>(options.evaluator, ConstFold::kDefaultMaxBytes,
                                    std::vector<std::string>{"broadcast_to"}));
  }
  add(std::make_unique<Dce>());
  return p;
}

}  // namespace tern::passes
