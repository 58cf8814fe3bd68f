// const_fold: replaces a pure node whose inputs are all constants by constants holding its
// outputs. The values come from a NodeEvaluator the runtime supplies (passes do not link
// kernels), so folding computes exactly what the kernel would at run time.
// Does not: fold stateful or mutating nodes (random ops, reads of inputs and variables) or nodes
// with control inputs (their users would lose that order); fold a node whose output would be
// larger than max(its inputs, `max_bytes_without_inputs`) (no turning broadcast_to of a scalar
// into a huge literal); fold when the evaluator throws (the error is left to surface at run
// time, with its usual context), or fold the ops in `keep_ops`.
#pragma once

#include <string>
#include <vector>

#include "tern/passes/pass.h"

namespace tern::passes {

class ConstFold final : public Pass {
 public:
  static constexpr size_t kDefaultMaxBytes = 64 << 10;
  explicit ConstFold(NodeEvaluator evaluator, size_t max_bytes_without_inputs = kDefaultMaxBytes,
                     std::vector<std::string> keep_ops = {})
      : evaluator_(std::move(evaluator)),
        max_bytes_(max_bytes_without_inputs),
        keep_ops_(std::move(keep_ops)) {}
  std::string name() const override { return "const_fold"; }
  bool run(ir::Graph& g) override;

 private:
  NodeEvaluator evaluator_;
  size_t max_bytes_;
  std::vector<std::string> keep_ops_;  // ops never folded
};

}  // namespace tern::passes
