// Graph construction, rewriting helpers and lookups.
#include "tern/ir/graph.h"

#include <algorithm>

#include "tern/ops/registry.h"

namespace tern::ir {

std::string Value::ref() const {
  return index_ == 0 ? "%" + node_->name() : str_cat("%", node_->name(), "#", index_);
}

void Node::set_input(int i, Value* v) {
  Value*& slot = inputs_[static_cast<size_t>(i)];
  if (slot == v) return;
  if (v->type() != slot->type()) {
    throw_error(ErrorCode::kInternal, "set_input on node '", name_, "': type ",
                v->type().to_string(), " replaces ", slot->type().to_string());
  }
  auto& uses = slot->uses_;
  uses.erase(std::find_if(uses.begin(), uses.end(),
                          [&](const Use& u) { return u.node == this && u.input_index == i; }));
  slot = v;
  v->uses_.push_back({this, i});
}

void Node::add_control_input(Node* n) {
  if (n == this) return;
  if (std::find(control_inputs_.begin(), control_inputs_.end(), n) == control_inputs_.end()) {
    control_inputs_.push_back(n);
  }
}

std::string Graph::unique_name(std::string_view base) {
  std::string b(base.empty() ? "n" : base);
  if (!by_name_.count(b)) return b;
  for (int i = 1;; ++i) {
    std::string candidate = str_cat(b, "_", i);
    if (!by_name_.count(candidate)) return candidate;
  }
}

Node* Graph::add_node(std::string_view op_name, std::vector<Value*> inputs, ops::Attrs attrs,
                      std::string_view name) {
  const ops::OpDef& op = ops::OpRegistry::global().get(op_name);
  std::string node_name = unique_name(name.empty() ? op_name : name);
  std::vector<TensorType> in_types;
  in_types.reserve(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i] == nullptr) {
      throw_error(ErrorCode::kInvalidArgument, "op '", op_name, "' (node '", node_name,
                  "'): input ", i, " is null");
    }
    if (inputs[i]->node()->graph() != this) {
      throw_error(ErrorCode::kInvalidArgument, "op '", op_name, "' (node '", node_name,
                  "'): input ", i, " belongs to another graph");
    }
    in_types.push_back(inputs[i]->type());
  }
  std::vector<TensorType> out_types = op.check_and_infer(node_name, in_types, attrs);
  auto node = std::unique_ptr<Node>(new Node());
  node->id_ = next_id_++;
  node->name_ = node_name;
  node->op_ = &op;
  node->attrs_ = std::move(attrs);
  node->inputs_ = std::move(inputs);
  node->graph_ = this;
  for (size_t i = 0; i < out_types.size(); ++i) {
    node->outputs_.push_back(std::unique_ptr<Value>(
        new Value(node.get(), static_cast<int>(i), std::move(out_types[i]))));
  }
  for (size_t i = 0; i < node->inputs_.size(); ++i) {
    node->inputs_[i]->uses_.push_back({node.get(), static_cast<int>(i)});
  }
  Node* raw = node.get();
  by_name_[node_name] = raw;
  nodes_.push_back(std::move(node));
  return raw;
}

static std::vector<int64_t> dims_of(const TensorType& t) {
  return t.shape.dims();
}

Value* Graph::input(std::string_view name, const TensorType& type) {
  if (find_input(name))
    throw_error(ErrorCode::kInvalidArgument, "graph input '", name, "' declared twice");
  return add("input", {},
             {{"name", std::string(name)}, {"dtype", type.dtype}, {"shape", dims_of(type)}}, name);
}

Value* Graph::variable(std::string_view name, const TensorType& type) {
  if (Node* n = find_variable(name)) {
    if (n->output()->type() != type) {
      throw_error(ErrorCode::kInvalidArgument, "variable '", name, "' declared as ",
                  n->output()->type().to_string(), " and as ", type.to_string());
    }
    return n->output();
  }
  return add("variable", {},
             {{"name", std::string(name)}, {"dtype", type.dtype}, {"shape", dims_of(type)}}, name);
}

Value* Graph::constant(const Tensor& value, std::string_view name) {
  return add("constant", {}, {{"value", value}}, name.empty() ? "const" : name);
}

void Graph::add_output(std::string_view name, Value* v) {
  TERN_CHECK(v != nullptr && v->node()->graph() == this, "output ", name);
  outputs_.push_back({std::string(name), v});
}

void Graph::replace_all_uses(Value* from, Value* to) {
  if (from == to) return;
  if (from->type() != to->type()) {
    throw_error(ErrorCode::kInternal, "replace_all_uses: ", from->ref(), " is ",
                from->type().to_string(), " but ", to->ref(), " is ", to->type().to_string());
  }
  std::vector<Use> uses = from->uses_;
  for (const Use& u : uses) u.node->set_input(u.input_index, to);
  for (auto& o : outputs_) {
    if (o.value == from) o.value = to;
  }
}

void Graph::remove_node(Node* n) {
  for (const auto& out : n->outputs_) {
    TERN_CHECK(out->uses_.empty(), "removing node '", n->name(), "' whose output is still used");
    for (const auto& o : outputs_)
      TERN_CHECK(o.value != out.get(), "removing graph output ", o.name);
  }
  for (size_t i = 0; i < n->inputs_.size(); ++i) {
    auto& uses = n->inputs_[i]->uses_;
    uses.erase(std::remove_if(uses.begin(), uses.end(), [&](const Use& u) { return u.node == n; }),
               uses.end());
  }
  for (auto& other : nodes_) {
    auto& c = other->control_inputs_;
    c.erase(std::remove(c.begin(), c.end(), n), c.end());
  }
  by_name_.erase(n->name());
  nodes_.erase(
      std::find_if(nodes_.begin(), nodes_.end(), [&](const auto& p) { return p.get() == n; }));
}

std::vector<Node*> Graph::nodes() const {
  std::vector<Node*> out;
  out.reserve(nodes_.size());
  for (const auto& n : nodes_) out.push_back(n.get());
  return out;
}

Node* Graph::find_node(std::string_view name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : it->second;
}

std::vector<Node*> Graph::nodes_of(std::string_view op) const {
  std::vector<Node*> out;
  for (const auto& n : nodes_) {
    if (n->op_name() == op) out.push_back(n.get());
  }
  return out;
}

Node* Graph::find_input(std::string_view name) const {
  for (const auto& n : nodes_) {
    if (n->op_name() == "input" && n->attrs().get_string("name") == name) return n.get();
  }
  return nullptr;
}

Node* Graph::find_variable(std::string_view name) const {
  for (const auto& n : nodes_) {
    if (n->op_name() == "variable" && n->attrs().get_string("name") == name) return n.get();
  }
  return nullptr;
}

}  // namespace tern::ir
