// The IR: a Graph owns Nodes; each Node applies one op to input Values and defines output Values
// (SSA). Values keep their use lists, so rewrites (replace_all_uses) and DCE are cheap. Node
// insertion order is not necessarily topological after rewrites: use analysis/topo_order.h.
#pragma once

#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tern/ops/op_def.h"
#include "tern/tensor/tensor.h"

namespace tern::ir {

class Node;
class Graph;

struct Use {
  Node* node;
  int input_index;
};

class Value {
 public:
  Node* node() const { return node_; }
  int index() const { return index_; }
  const TensorType& type() const { return type_; }
  DType dtype() const { return type_.dtype; }
  const Shape& shape() const { return type_.shape; }
  const std::vector<Use>& uses() const { return uses_; }
  // "%name" for output 0 of a node, "%name#k" for output k.
  std::string ref() const;

 private:
  friend class Node;
  friend class Graph;
  Value(Node* node, int index, TensorType type)
      : node_(node), index_(index), type_(std::move(type)) {}
  Node* node_;
  int index_;
  TensorType type_;
  std::vector<Use> uses_;
};

class Node {
 public:
  int id() const { return id_; }
  const std::string& name() const { return name_; }
  const ops::OpDef& op() const { return *op_; }
  const std::string& op_name() const { return op_->name; }
  const ops::Attrs& attrs() const { return attrs_; }
  const std::vector<Value*>& inputs() const { return inputs_; }
  Value* input(int i) const { return inputs_[static_cast<size_t>(i)]; }
  int num_inputs() const { return static_cast<int>(inputs_.size()); }
  int num_outputs() const { return static_cast<int>(outputs_.size()); }
  Value* output(int i = 0) const { return outputs_[static_cast<size_t>(i)].get(); }
  // Nodes that must run before this one without a data edge (e.g. readers of a variable that
  // this node mutates).
  const std::vector<Node*>& control_inputs() const { return control_inputs_; }
  Graph* graph() const { return graph_; }

  void set_input(int i, Value* v);
  void add_control_input(Node* n);
  void clear_control_inputs() { control_inputs_.clear(); }
  // Source ops (input/variable) carry their name in attribute "name".
  bool is_source() const { return op_->has_trait(ops::kTraitSource); }

 private:
  friend class Graph;
  Node() = default;
  int id_ = 0;
  std::string name_;
  const ops::OpDef* op_ = nullptr;
  ops::Attrs attrs_;
  std::vector<Value*> inputs_;
  std::vector<std::unique_ptr<Value>> outputs_;
  std::vector<Node*> control_inputs_;
  Graph* graph_ = nullptr;
};

struct GraphOutput {
  std::string name;
  Value* value;
};

class Graph {
 public:
  explicit Graph(std::string name = "main") : name_(std::move(name)) {}
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  const std::string& name() const { return name_; }

  // Adds a node: checks attributes, infers output types (errors name the op, node and shapes).
  // An empty `name` gets a unique one derived from the op; a taken name gets a numeric suffix.
  Node* add_node(std::string_view op, std::vector<Value*> inputs, ops::Attrs attrs = {},
                 std::string_view name = "");
  // Single-output shorthand.
  Value* add(std::string_view op, std::vector<Value*> inputs, ops::Attrs attrs = {},
             std::string_view name = "") {
    return add_node(op, std::move(inputs), std::move(attrs), name)->output(0);
  }

  Value* input(std::string_view name, const TensorType& type);
  Value* variable(std::string_view name, const TensorType& type);
  Value* constant(const Tensor& value, std::string_view name = "");
  Value* scalar(DType dtype, double value) { return constant(Tensor::scalar(dtype, value)); }

  void add_output(std::string_view name, Value* v);
  const std::vector<GraphOutput>& outputs() const { return outputs_; }
  void set_output(size_t i, Value* v) { outputs_[i].value = v; }
  void clear_outputs() { outputs_.clear(); }

  // Every use of `from` (and graph outputs) now uses `to`; types must match.
  void replace_all_uses(Value* from, Value* to);
  // Removes a node none of whose outputs is used.
  void remove_node(Node* n);

  // Nodes in insertion order (stable ids); removed nodes are gone.
  std::vector<Node*> nodes() const;
  size_t num_nodes() const { return nodes_.size(); }
  Node* find_node(std::string_view name) const;
  std::vector<Node*> nodes_of(std::string_view op) const;
  // Input / variable nodes by declared name.
  Node* find_input(std::string_view name) const;
  Node* find_variable(std::string_view name) const;

  std::string unique_name(std::string_view base);

 private:
  std::string name_;
  std::vector<std::unique_ptr<Node>> nodes_;
  std::map<std::string, Node*, std::less<>> by_name_;
  std::vector<GraphOutput> outputs_;
  int next_id_ = 0;
};

}  // namespace tern::ir
