// rebatch: an inference graph rebuilt at another batch size, node by node.
#include "tern/serve/rebatch.h"

#include <sstream>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "tern/base/error.h"
#include "tern/ir/analysis/topo_order.h"
#include "tern/ir/printer.h"

namespace tern::serve {
namespace {

// A broadcast_to that adds leading dims creates the batch dim when its target's dim 0 is the
// traced batch: that dim follows the new batch.
ops::Attrs rebatched_attrs(const ir::Node& n, int64_t old_batch, int64_t batch) {
  ops::Attrs attrs = n.attrs();
  if (n.op_name() == "input") {
    std::vector<int64_t> dims = attrs.get_ints("shape");
    dims[0] = batch;
    attrs.set("shape", dims);
  } else if (n.op_name() == "broadcast_to") {
    std::vector<int64_t> dims = attrs.get_ints("shape");
    bool adds_batch = static_cast<int>(dims.size()) > n.input(0)->shape().rank();
    if (adds_batch && dims[0] == old_batch) {
      dims[0] = batch;
      attrs.set("shape", dims);
    }
  }
  return attrs;
}

// Every node the named outputs depend on, through data and control edges.
std::unordered_set<const ir::Node*> live_nodes(const ir::Graph& g,
                                               const std::vector<std::string>& outputs) {
  std::vector<const ir::Node*> stack;
  for (const std::string& name : outputs) {
    const ir::Value* v = nullptr;
    for (const auto& o : g.outputs()) {
      if (o.name == name) v = o.value;
    }
    TERN_CHECK_ARG(v != nullptr, "graph '", g.name(), "' has no output '", name, "'");
    stack.push_back(v->node());
  }
  std::unordered_set<const ir::Node*> live;
  while (!stack.empty()) {
    const ir::Node* n = stack.back();
    stack.pop_back();
    if (!live.insert(n).second) continue;
    for (const ir::Value* v : n->inputs()) stack.push_back(v->node());
    for (const ir::Node* c : n->control_inputs()) stack.push_back(c);
  }
  return live;
}

}  // namespace

std::set<std::string> inputs_read_by(const ir::Graph& g, const std::vector<std::string>& outputs) {
  std::set<std::string> names;
  for (const ir::Node* n : live_nodes(g, outputs)) {
    if (n->op_name() == "input") names.insert(n->attrs().get_string("name"));
  }
  return names;
}

std::unique_ptr<ir::Graph> prune_to_outputs(const ir::Graph& g,
                                            const std::vector<std::string>& outputs) {
  const std::unordered_set<const ir::Node*> live = live_nodes(g, outputs);
  auto out = std::make_unique<ir::Graph>(g.name());
  std::unordered_map<const ir::Value*, ir::Value*> map;
  std::unordered_map<const ir::Node*, ir::Node*> node_map;
  for (ir::Node* n : ir::topo_order(g)) {
    if (!live.count(n)) continue;
    std::vector<ir::Value*> inputs;
    for (ir::Value* v : n->inputs()) inputs.push_back(map.at(v));
    ir::Node* c = out->add_node(n->op_name(), inputs, n->attrs(), n->name());
    node_map[n] = c;
    for (int i = 0; i < n->num_outputs(); ++i) map[n->output(i)] = c->output(i);
  }
  for (ir::Node* n : g.nodes()) {
    if (!live.count(n)) continue;
    for (ir::Node* ctl : n->control_inputs()) node_map.at(n)->add_control_input(node_map.at(ctl));
  }
  for (const std::string& name : outputs) {
    for (const auto& o : g.outputs()) {
      if (o.name == name) out->add_output(o.name, map.at(o.value));
    }
  }
  return out;
}

int64_t graph_batch_size(const ir::Graph& g) {
  int64_t batch = -1;
  std::string first;
  for (ir::Node* n : g.nodes()) {
    if (n->op_name() != "input") continue;
    const Shape& s = n->output()->shape();
    const std::string& name = n->attrs().get_string("name");
    TERN_CHECK_ARG(s.rank() >= 1, "graph '", g.name(), "': input '", name,
                   "' has no batch dimension (shape ", s, ")");
    if (batch < 0) {
      batch = s.dim(0);
      first = name;
    } else if (s.dim(0) != batch) {
      throw_error(ErrorCode::kInvalidArgument, "graph '", g.name(), "': input '", name,
                  "' has batch ", s.dim(0), " but input '", first, "' has ", batch);
    }
  }
  TERN_CHECK_ARG(batch >= 0, "graph '", g.name(), "' has no inputs");
  return batch;
}

std::unique_ptr<ir::Graph> rebatch(const ir::Graph& g, int64_t batch) {
  TERN_CHECK_ARG(batch >= 1, "rebatch: batch size must be >= 1, got ", batch);
  int64_t old_batch = graph_batch_size(g);
  auto out = std::make_unique<ir::Graph>(g.name());
  std::unordered_map<const ir::Value*, ir::Value*> map;
  std::unordered_map<const ir::Node*, ir::Node*> node_map;
  for (ir::Node* n : ir::topo_order(g)) {
    std::vector<ir::Value*> inputs;
    for (ir::Value* v : n->inputs()) inputs.push_back(map.at(v));
    ir::Node* c =
        out->add_node(n->op_name(), inputs, rebatched_attrs(*n, old_batch, batch), n->name());
    node_map[n] = c;
    for (int i = 0; i < n->num_outputs(); ++i) map[n->output(i)] = c->output(i);
  }
  for (ir::Node* n : g.nodes()) {
    for (ir::Node* ctl : n->control_inputs()) node_map.at(n)->add_control_input(node_map.at(ctl));
  }
  for (const auto& o : g.outputs()) out->add_output(o.name, map.at(o.value));
  return out;
}

std::string first_graph_difference(const ir::Graph& a, const ir::Graph& b) {
  std::istringstream sa(ir::print_graph(a)), sb(ir::print_graph(b));
  std::string la, lb;
  for (int line = 1;; ++line) {
    bool ha = static_cast<bool>(std::getline(sa, la));
    bool hb = static_cast<bool>(std::getline(sb, lb));
    if (!ha && !hb) return "";
    if (!ha) la = "<end of graph>";
    if (!hb) lb = "<end of graph>";
    if (la != lb || !ha || !hb) return str_cat("line ", line, ": `", la, "` vs `", lb, "`");
  }
}

}  // namespace tern::serve
