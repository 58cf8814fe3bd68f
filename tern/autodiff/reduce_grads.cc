// Gradient rules for the reduce family. Every rule first brings dy (and y) back to the keepdims
// shape, so it broadcasts against x:
//   sum:      dx = broadcast_to(dy)
//   mean:     dx = broadcast_to(dy / N)
//   max/min:  dx = dy * mask / count(mask), mask = (x == y): ties share the gradient evenly (as TF)
//   prod:     dx = dy * prod_{j != i} x_j, exact with zeros (no division by a zero element)
//   variance: dx = dy * 2 (x - mean(x)) / N
// argmax/argmin are not differentiable.
#include "tern/autodiff/autodiff.h"

namespace tern::autodiff {
namespace {

// The node's normalized reduction axes ([] means all).
std::vector<int64_t> reduced_axes(const GradContext& c) {
  const Shape& in = c.x(0)->shape();
  std::vector<int64_t> axes;
  const std::vector<int64_t>& attr = c.attrs().get_ints("axes");
  if (attr.empty()) {
    for (int i = 0; i < in.rank(); ++i) axes.push_back(i);
    return axes;
  }
  for (int64_t a : attr) axes.push_back(in.normalize_axis(a, "reduce axis"));
  return axes;
}

// Number of input elements reduced into each output element.
int64_t reduce_count(const GradContext& c) {
  int64_t n = 1;
  for (int64_t a : reduced_axes(c)) n *= c.x(0)->shape().dim(static_cast<int>(a));
  return n;
}

// `v` (shaped like the output) reshaped to the keepdims shape of the output.
ir::Value* kept(GradContext& c, ir::Value* v) {
  if (c.attrs().get_bool("keepdims")) return v;
  std::vector<int64_t> dims = c.x(0)->shape().dims();
  for (int64_t a : reduced_axes(c)) dims[static_cast<size_t>(a)] = 1;
  if (Shape(dims) == v->shape()) return v;
  return c.op("reshape", {v}, {{"shape", dims}});
}

ir::Value* broadcast_to_x(GradContext& c, ir::Value* v) {
  if (v->shape() == c.x(0)->shape()) return v;
  return c.op("broadcast_to", {v}, {{"shape", c.x(0)->shape().dims()}});
}

ir::Value* sum_kept(GradContext& c, ir::Value* v) {
  return c.op("sum", {v}, {{"axes", reduced_axes(c)}, {"keepdims", true}});
}

// dy in x's dtype: sum / mean with out_dtype = "f32" return f32 from a 16-bit x.
ir::Value* dy_as_x(GradContext& c) {
  ir::Value* dy = c.dy();
  if (dy->dtype() == c.x(0)->dtype()) return dy;
  return c.op("cast", {dy}, {{"dtype", c.x(0)->dtype()}});
}

std::vector<ir::Value*> sum_grad(GradContext& c) {
  return {broadcast_to_x(c, kept(c, dy_as_x(c)))};
}

std::vector<ir::Value*> mean_grad(GradContext& c) {
  DType dt = c.x(0)->dtype();
  double scale = 1.0 / static_cast<double>(reduce_count(c));
  ir::Value* g = c.op("mul", {kept(c, dy_as_x(c)), c.scalar(scale, dt)});
  return {broadcast_to_x(c, g)};
}

std::vector<ir::Value*> extremum_grad(GradContext& c) {
  DType dt = c.x(0)->dtype();
  ir::Value* mask = c.op("cast", {c.op("equal", {c.x(0), kept(c, c.y())})}, {{"dtype", dt}});
  ir::Value* share = c.op("div", {kept(c, c.dy()), sum_kept(c, mask)});
  return {c.op("mul", {mask, share})};
}

std::vector<ir::Value*> prod_grad(GradContext& c) {
  DType dt = c.x(0)->dtype();
  ir::Value* x = c.x(0);
  ir::Value *zero = c.scalar(0, dt), *one = c.scalar(1, dt);
  ir::Value* is_zero = c.op("equal", {x, zero});
  ir::Value* zeros_count = sum_kept(c, c.op("cast", {is_zero}, {{"dtype", dt}}));
  ir::Value* x_nonzero = c.op("where", {is_zero, one, x});
  ir::Value* p = c.op("prod", {x_nonzero}, {{"axes", reduced_axes(c)}, {"keepdims", true}});
  // No zero: p / x_i. One zero: p at the zero, 0 elsewhere. Two or more: 0 everywhere.
  ir::Value* no_zero = c.op("div", {p, x_nonzero});
  ir::Value* one_zero = c.op("where", {is_zero, p, zero});
  ir::Value* g = c.op("where", {c.op("equal", {zeros_count, one}), one_zero, zero});
  g = c.op("where", {c.op("equal", {zeros_count, zero}), no_zero, g});
  return {c.op("mul", {g, kept(c, c.dy())})};
}

std::vector<ir::Value*> variance_grad(GradContext& c) {
  DType dt = c.x(0)->dtype();
  ir::Value* mean = c.op("mean", {c.x(0)}, {{"axes", reduced_axes(c)}, {"keepdims", true}});
  ir::Value* centered = c.op("sub", {c.x(0), mean});
  double scale = 2.0 / static_cast<double>(reduce_count(c));
  ir::Value* g = c.op("mul", {kept(c, c.dy()), c.scalar(scale, dt)});
  return {c.op("mul", {centered, g})};
}

}  // namespace

void register_reduce_grads(GradRegistry& r) {
  r.add("sum", sum_grad);
  r.add("mean", mean_grad);
  r.add("max", extremum_grad);
  r.add("min", extremum_grad);
  r.add("prod", prod_grad);
  r.add("variance", variance_grad);
}

}  // namespace tern::autodiff
