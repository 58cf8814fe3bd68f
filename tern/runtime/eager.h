// The eager path: run one op at a time with the same OpDefs and kernels the compiled path uses.
// For debugging and tests; every call infers types, selects a kernel and allocates outputs.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tern/ir/graph.h"
#include "tern/ops/attrs.h"
#include "tern/runtime/variable_store.h"

namespace tern::runtime {

struct EagerOptions {
  // Kernel candidate to force ("ref" forces reference kernels); empty = normal selection.
  std::string kernel;
  bool deterministic = false;
  // Where the op runs. Inputs must be readable there (on that device, or host tensors when its
  // memory is host-accessible); outputs are allocated there (plain host tensors on the CPU).
  DeviceType device = DeviceType::kCPU;
  // constant_inputs[i]: the kernel may treat input i as constant (KernelSignature's field, as in
  // a served model's executable), e.g. to test a kernel that takes only constant filters.
  std::vector<bool> constant_inputs;
};

// Runs `op` on `inputs`; returns its outputs. Errors name the op and the shapes.
std::vector<Tensor> eager_call(std::string_view op, const std::vector<Tensor>& inputs,
                               const ops::Attrs& attrs = {}, const EagerOptions& options = {});
inline Tensor eager_call1(std::string_view op, const std::vector<Tensor>& inputs,
                          const ops::Attrs& attrs = {}, const EagerOptions& options = {}) {
  return eager_call(op, inputs, attrs, options).at(0);
}

using Feeds = std::vector<std::pair<std::string, Tensor>>;

// Interprets a graph node by node on the eager path (no passes): the reference semantics of a
// graph. Variables are read from (and mutated in) `vars`. Fed values and constants are copied to
// options.device when it cannot read them. Returns the graph outputs (on options.device).
std::vector<Tensor> run_graph_eager(const ir::Graph& g, const Feeds& feeds, VariableStore* vars,
                                    const EagerOptions& options = {});

// The variables `n` writes in place (when its op mutates its inputs), each with the dtypes of the
// copies written alongside (VariableStore::written after a run): added to `out`.
void add_written_variables(const ir::Node& n, std::map<std::string, std::vector<DType>>& out);

}  // namespace tern::runtime
