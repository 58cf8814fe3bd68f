// Batch polymorphism for inference graphs. The IR has static shapes, so an exported graph is traced
// at one batch size and rebuilt at another when a request of that size comes: every input's dim 0
// is set to the new batch and each node is re-added in topological order, so every type is
// re-inferred by its op. What makes a graph rebatchable: reshapes write the batch as -1 (the nn
// layers do, nn::reshape_batch_dim), and a broadcast_to that creates the leading (batch) dim is
// rewritten to the new batch. Anything else that bakes the batch into an attribute is not
// rewritten: the exporter's self-check (trace at two batch sizes, compare) catches it and names
// the node.
#pragma once

#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "tern/ir/graph.h"

namespace tern::serve {

// Dim 0 shared by every input of `g`; InvalidArgument naming the input that has none or differs.
int64_t graph_batch_size(const ir::Graph& g);

// `g` rebuilt with every input's dim 0 = `batch` (>= 1). Errors from type inference name the node.
std::unique_ptr<ir::Graph> rebatch(const ir::Graph& g, int64_t batch);

// The names of the graph inputs that the graph outputs named `outputs` read (through data and
// control edges). InvalidArgument naming an output `g` does not have.
std::set<std::string> inputs_read_by(const ir::Graph& g, const std::vector<std::string>& outputs);

// The part of `g` that computes the graph outputs named `outputs` (in that order): those outputs
// and every node they depend on; inputs, variables and other nodes they do not read are left out
// (a signature that reads only some of a model's inputs runs this). Names and attributes are kept.
std::unique_ptr<ir::Graph> prune_to_outputs(const ir::Graph& g,
                                            const std::vector<std::string>& outputs);

// "" when print_graph(a) == print_graph(b); otherwise the first differing line of each, e.g.
// "line 7: `%d = reshape(...)...` vs `...`".
std::string first_graph_difference(const ir::Graph& a, const ir::Graph& b);

}  // namespace tern::serve
