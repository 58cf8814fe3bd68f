// The work of a compiled step, for the suite's floors (bench/run_suite.py): the multiply-add FLOPs
// of its matmul and convolution nodes (split, since each is held to its own measured peak; the
// 1x1 convolutions counted apart too: each is a GEMM, which no convolution algorithm does in fewer
// multiplications, so the suite holds them to the matmul peak), and
// the least memory traffic of its memory-bound nodes, the optimizer update and the normalizations
// (held to the measured memory bandwidth). Everything else (elementwise ops, pooling, casts,
// dropout, the loss) is left out: the floor is a lower bound on the step's time, not a model of it.
//
// Bytes counted per node (x = the normalized tensor, in its own dtype):
//   sgd_update / adam_update / adamw_update / rmsprop_update: each parameter read and written,
//     its gradient read, each optimizer slot read and written (Adam: 7 x the parameter bytes,
//     SGD with momentum: 5 x);
//   batch_norm_training: x read twice (the statistics, then the normalization) and y written: 3 x;
//   batch_norm_grad: dy and x read for the two reductions, then dy and x read and dx written: 5 x;
//   batch_norm_inference: x read, y written: 2 x;
//   layer_norm: 2 x (a row stays in cache between its statistics and its normalization);
//   layer_norm_grad: dy and x read, dx written: 3 x.
#pragma once

#include <string>

#include "tern/ir/graph.h"
#include "tern/ops/conv_geometry.h"
#include "tern/ops/optimizer_layout.h"

namespace tern::bench {

struct GraphCost {
  double matmul_flops = 0;
  double conv_flops = 0;       // as a direct convolution (Winograd does fewer multiplications)
  double conv_1x1_flops = 0;   // the part of conv_flops in 1x1 filters (GEMMs)
  double optimizer_bytes = 0;  // the optimizer update nodes
  double norm_bytes = 0;       // batch norm and layer norm, forward and backward
  double flops() const { return matmul_flops + conv_flops; }
};

inline double value_bytes(const ir::Value* v) {
  return static_cast<double>(v->shape().num_elements()) *
         static_cast<double>(dtype_size(v->dtype()));
}

inline GraphCost graph_cost(const ir::Graph& g) {
  GraphCost c;
  for (const ir::Node* n : g.nodes()) {
    const std::string& op = n->op_name();
    if (n->num_inputs() < 1) continue;
    const bool has_output = n->num_outputs() >= 1;  // the optimizer updates have none
    if ((op == "matmul" || op == "fused_matmul") && has_output && n->num_inputs() >= 2) {
      const Shape& a = n->input(0)->shape();
      bool ta = n->attrs().has("transpose_a") && n->attrs().get_bool("transpose_a");
      int64_t k = ta ? a.dim(a.rank() - 2) : a.dim(a.rank() - 1);
      c.matmul_flops +=
          2.0 * static_cast<double>(n->output()->shape().num_elements()) * static_cast<double>(k);
    } else if ((op == "attention" || op == "attention_grad") && has_output) {
      // The matmuls the op does per (batch, head): q k^T and probs v forward; the gradient's
      // dout v^T, probs^T dout, ds k and ds^T q.
      const int q = op == "attention" ? 0 : 1;
      const Shape &qs = n->input(q)->shape(), &vs = n->input(q + 2)->shape();
      const double pairs = static_cast<double>(qs.dim(0) * qs.dim(2) * qs.dim(1) * vs.dim(1));
      const double d = static_cast<double>(qs.dim(3)), dv = static_cast<double>(vs.dim(3));
      c.matmul_flops += 2.0 * pairs * (op == "attention" ? d + dv : 2.0 * (d + dv));
    } else if ((op == "conv2d" || op == "fused_conv2d" || op == "conv2d_backprop_input" ||
                op == "conv2d_backprop_filter" || op == "conv2d_backprop_input_pooled" ||
                op == "conv2d_backprop_filter_pooled") &&
               has_output && n->num_inputs() >= 2) {
      // Every form does out(conv) * kh * kw * in_per_group multiply-adds. fused_conv2d's output
      // may be pooled, and the pooled gradients read the pooling's dy: their convolution's
      // output from the geometry.
      const bool filter_gradient =
          op == "conv2d_backprop_filter" || op == "conv2d_backprop_filter_pooled";
      const Shape& f = filter_gradient ? n->output(0)->shape() : n->input(1)->shape();
      const Shape y =
          op == "conv2d_backprop_filter"  ? n->input(1)->shape()
          : op == "conv2d_backprop_input" ? n->input(0)->shape()
          : op == "conv2d_backprop_input_pooled"
              ? ops::conv2d_geometry(Shape(n->attrs().get_ints("input_shape")), f, n->attrs())
                    .output_shape()
          : op == "fused_conv2d" || op == "conv2d_backprop_filter_pooled"
              ? ops::conv2d_geometry(n->input(0)->shape(), f, n->attrs()).output_shape()
              : n->output(0)->shape();
      const double flops = 2.0 * static_cast<double>(y.num_elements()) *
                           static_cast<double>(f.dim(0) * f.dim(1) * f.dim(2));
      c.conv_flops += flops;
      if (f.dim(0) == 1 && f.dim(1) == 1) c.conv_1x1_flops += flops;
    } else if (op == "conv2d_backprop_pooled" && has_output) {
      // Both gradients of the convolution of x (input 0) and the filter (input 2): twice its
      // multiply-adds.
      const Shape& f = n->input(2)->shape();
      const Shape y = ops::conv2d_geometry(n->input(0)->shape(), f, n->attrs()).output_shape();
      const double flops = 2.0 * 2.0 * static_cast<double>(y.num_elements()) *
                           static_cast<double>(f.dim(0) * f.dim(1) * f.dim(2));
      c.conv_flops += flops;
      if (f.dim(0) == 1 && f.dim(1) == 1) c.conv_1x1_flops += flops;
    } else if (op == "sgd_update" || op == "adam_update" || op == "adamw_update" ||
               op == "rmsprop_update") {
      ops::OptimizerLayout l = ops::optimizer_layout(op, n->attrs());
      for (int i = 0; i < l.num_params; ++i) {
        c.optimizer_bytes +=
            2 * value_bytes(n->input(l.param(i))) + value_bytes(n->input(l.grad(i)));
        for (int s = 0; s < l.num_slots(); ++s)
          c.optimizer_bytes += 2 * value_bytes(n->input(l.slot(s, i)));
      }
    } else if (op == "batch_norm_training") {
      c.norm_bytes += 3 * value_bytes(n->input(0));
    } else if (op == "batch_norm_grad") {
      c.norm_bytes += 5 * value_bytes(n->input(1));
    } else if (op == "batch_norm_inference" || op == "layer_norm") {
      c.norm_bytes += 2 * value_bytes(n->input(0));
    } else if (op == "layer_norm_grad") {
      c.norm_bytes += 3 * value_bytes(n->input(1));
    }
  }
  return c;
}

}  // namespace tern::bench
