// Reverse-mode automatic differentiation on the IR. gradients() appends the gradient subgraph of
// a scalar loss with respect to chosen values to the same graph. Only nodes on a path from a
// `wrt` value to the loss get gradient nodes (nothing for the input batch unless asked).
//
// Gradient rules are a table keyed by op name: one short entry per primitive, in
// <family>_grads.cc. A rule receives the forward node and the gradients of its outputs and
// returns one gradient per input (nullptr where none flows or none is needed).
#pragma once

#include <functional>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "tern/ir/graph.h"

namespace tern::autodiff {

class GradContext {
 public:
  GradContext(ir::Graph& g, ir::Node& node, std::vector<ir::Value*> output_grads,
              std::vector<bool> needs_input_grad);

  ir::Graph& graph() { return graph_; }
  const ir::Node& node() const { return node_; }
  const ops::Attrs& attrs() const { return node_.attrs(); }
  ir::Value* x(int i) const { return node_.input(i); }       // forward input i
  ir::Value* y(int i = 0) const { return node_.output(i); }  // forward output i
  // Gradient of output i; zeros if no gradient reached that output.
  ir::Value* dy(int i = 0);
  bool has_dy(int i) const { return output_grads_[static_cast<size_t>(i)] != nullptr; }
  bool needs(int input) const { return needs_input_grad_[static_cast<size_t>(input)]; }

  // Adds a node named under "grad/<forward node>/".
  ir::Value* op(std::string_view op, std::vector<ir::Value*> inputs, ops::Attrs attrs = {});
  ir::Node* op_node(std::string_view op, std::vector<ir::Value*> inputs, ops::Attrs attrs = {});
  ir::Value* scalar(double v, DType dtype);
  ir::Value* zeros(const TensorType& type);
  // Sums `g` over the dims that were broadcast to reach its shape from `target` (NumPy rules).
  ir::Value* sum_to(ir::Value* g, const Shape& target);

 private:
  ir::Graph& graph_;
  ir::Node& node_;
  std::vector<ir::Value*> output_grads_;
  std::vector<bool> needs_input_grad_;
};

using GradRule = std::function<std::vector<ir::Value*>(GradContext&)>;

class GradRegistry {
 public:
  // The process-wide table, with every built-in rule registered.
  static GradRegistry& global();
  void add(std::string_view op, GradRule rule);
  const GradRule* find(std::string_view op) const;
  bool has(std::string_view op) const { return find(op) != nullptr; }

 private:
  std::map<std::string, GradRule, std::less<>> rules_;
};

// Gradients of `loss` (a scalar, or any shape with `loss_grad` supplied) with respect to each of
// `wrt`, added to `g`. A wrt value that does not influence the loss gets zeros.
// InvalidArgument naming the op if a needed node has no gradient rule.
std::vector<ir::Value*> gradients(ir::Graph& g, ir::Value* loss, std::span<ir::Value* const> wrt,
                                  ir::Value* loss_grad = nullptr);

// Families of gradient rules (one file each).
void register_unary_grads(GradRegistry& r);
void register_binary_grads(GradRegistry& r);
void register_reduce_grads(GradRegistry& r);
void register_matmul_grads(GradRegistry& r);
void register_shape_grads(GradRegistry& r);
void register_softmax_grads(GradRegistry& r);
void register_attention_grads(GradRegistry& r);
void register_conv_grads(GradRegistry& r);
void register_norm_grads(GradRegistry& r);
void register_nn_misc_grads(GradRegistry& r);
void register_fused_grads(GradRegistry& r);

}  // namespace tern::autodiff
