// Gradient rules for the shape family. Data movement is linear, so each rule moves dy back:
//   reshape / expand_dims / squeeze: reshape to x's shape     transpose: inverse permutation
//   broadcast_to: sum_to x's shape                            concat: split     split: concat
//   stack: split + reshape                                    slice: pad        pad: slice
//   strided_slice <-> strided_slice_grad                      gather <-> scatter_add
// gather along axis a > 0 moves the index dims to the front, scatters along axis 0, and
// transposes back. one_hot is not differentiable.
#include "tern/autodiff/autodiff.h"

namespace tern::autodiff {
namespace {

using Grads = std::vector<ir::Value*>;

ir::Value* reshape_to(GradContext& c, ir::Value* v, const Shape& shape) {
  if (v->shape() == shape) return v;
  return c.op("reshape", {v}, {{"shape", shape.dims()}});
}

Grads reshape_grad(GradContext& c) {
  return {reshape_to(c, c.dy(), c.x(0)->shape())};
}

Grads transpose_grad(GradContext& c) {
  int r = c.x(0)->shape().rank();
  std::vector<int64_t> perm = c.attrs().get_ints("perm");
  if (perm.empty()) {
    for (int i = r - 1; i >= 0; --i) perm.push_back(i);
  }
  std::vector<int64_t> inverse(perm.size());
  for (size_t i = 0; i < perm.size(); ++i)
    inverse[static_cast<size_t>(perm[i])] = static_cast<int64_t>(i);
  return {c.op("transpose", {c.dy()}, {{"perm", inverse}})};
}

Grads broadcast_to_grad(GradContext& c) {
  return {c.sum_to(c.dy(), c.x(0)->shape())};
}

Grads concat_grad(GradContext& c) {
  int n = c.node().num_inputs();
  if (n == 1) return {c.dy()};
  int axis = c.y()->shape().normalize_axis(c.attrs().get_int("axis"), "concat axis");
  std::vector<int64_t> sizes;
  for (int i = 0; i < n; ++i) sizes.push_back(c.x(i)->shape().dim(axis));
  ir::Node* split = c.op_node("split", {c.dy()}, {{"axis", int64_t{axis}}, {"sizes", sizes}});
  Grads out;
  for (int i = 0; i < n; ++i) out.push_back(c.needs(i) ? split->output(i) : nullptr);
  return out;
}

Grads stack_grad(GradContext& c) {
  int n = c.node().num_inputs();
  const Shape& xs = c.x(0)->shape();
  if (n == 1) return {reshape_to(c, c.dy(), xs)};
  int axis = c.y()->shape().normalize_axis(c.attrs().get_int("axis"), "stack axis");
  std::vector<int64_t> sizes(static_cast<size_t>(n), 1);
  ir::Node* split = c.op_node("split", {c.dy()}, {{"axis", int64_t{axis}}, {"sizes", sizes}});
  Grads out;
  for (int i = 0; i < n; ++i)
    out.push_back(c.needs(i) ? reshape_to(c, split->output(i), xs) : nullptr);
  return out;
}

Grads split_grad(GradContext& c) {
  std::vector<ir::Value*> parts;
  for (int i = 0; i < c.node().num_outputs(); ++i) parts.push_back(c.dy(i));
  if (parts.size() == 1) return {parts[0]};
  return {c.op("concat", parts, {{"axis", c.attrs().get_int("axis")}})};
}

Grads slice_grad(GradContext& c) {
  const Shape& xs = c.x(0)->shape();
  const Shape& ys = c.y()->shape();
  const std::vector<int64_t>& begin = c.attrs().get_ints("begin");
  std::vector<int64_t> paddings;
  for (int k = 0; k < xs.rank(); ++k) {
    int64_t b = begin[static_cast<size_t>(k)];
    paddings.push_back(b);
    paddings.push_back(xs.dim(k) - b - ys.dim(k));
  }
  return {c.op("pad", {c.dy()}, {{"paddings", paddings}, {"value", 0.0}})};
}

Grads pad_grad(GradContext& c) {
  const Shape& xs = c.x(0)->shape();
  const std::vector<int64_t>& paddings = c.attrs().get_ints("paddings");
  std::vector<int64_t> begin;
  for (int k = 0; k < xs.rank(); ++k) begin.push_back(paddings[2 * static_cast<size_t>(k)]);
  return {c.op("slice", {c.dy()}, {{"begin", begin}, {"size", xs.dims()}})};
}

ops::Attrs strided_attrs(const GradContext& c) {
  return {{"begin", c.attrs().get_ints("begin")},
          {"end", c.attrs().get_ints("end")},
          {"strides", c.attrs().get_ints("strides")}};
}

Grads strided_slice_grad(GradContext& c) {
  ops::Attrs attrs = strided_attrs(c);
  attrs.set("shape", c.x(0)->shape().dims());
  return {c.op("strided_slice_grad", {c.dy()}, std::move(attrs))};
}

Grads strided_slice_grad_grad(GradContext& c) {
  return {c.op("strided_slice", {c.dy()}, strided_attrs(c))};
}

Grads gather_grad(GradContext& c) {
  ir::Value *params = c.x(0), *indices = c.x(1), *dy = c.dy();
  const Shape& ps = params->shape();
  int r = ps.rank();
  int axis = ps.normalize_axis(c.attrs().get_int("axis"), "gather axis");
  if (axis == 0) {
    return {c.op("scatter_add", {indices, dy}, {{"shape", ps.dims()}}), nullptr};
  }
  // dy: P[:a] + I + P[a+1:]  ->  I + P[:a] + P[a+1:]  (index dims first).
  int ni = indices->shape().rank();
  std::vector<int64_t> to_front;
  for (int i = 0; i < ni; ++i) to_front.push_back(axis + i);
  for (int i = 0; i < axis; ++i) to_front.push_back(i);
  for (int i = axis + ni; i < dy->shape().rank(); ++i) to_front.push_back(i);
  ir::Value* moved = c.op("transpose", {dy}, {{"perm", to_front}});
  // Scatter into [P[a]] + P[:a] + P[a+1:], then move dim 0 back to position a.
  std::vector<int64_t> rows{ps.dim(axis)};
  std::vector<int64_t> back;
  for (int i = 0; i < r; ++i) {
    if (i != axis) rows.push_back(ps.dim(i));
    back.push_back(i < axis ? i + 1 : (i == axis ? 0 : i));
  }
  ir::Value* scattered = c.op("scatter_add", {indices, moved}, {{"shape", rows}});
  return {c.op("transpose", {scattered}, {{"perm", back}}), nullptr};
}

Grads scatter_add_grad(GradContext& c) {
  return {nullptr, c.op("gather", {c.dy(), c.x(0)}, {{"axis", int64_t{0}}})};
}

}  // namespace

void register_shape_grads(GradRegistry& r) {
  r.add("reshape", reshape_grad);
  r.add("expand_dims", reshape_grad);
  r.add("squeeze", reshape_grad);
  r.add("transpose", transpose_grad);
  r.add("broadcast_to", broadcast_to_grad);
  r.add("concat", concat_grad);
  r.add("stack", stack_grad);
  r.add("split", split_grad);
  r.add("slice", slice_grad);
  r.add("pad", pad_grad);
  r.add("strided_slice", strided_slice_grad);
  r.add("strided_slice_grad", strided_slice_grad_grad);
  r.add("gather", gather_grad);
  r.add("scatter_add", scatter_add_grad);
}

}  // namespace tern::autodiff
