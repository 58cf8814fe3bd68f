// Gradients of the fused ops. Fusion normally runs after autodiff, but a graph that already holds
// fused nodes (loaded from text IR, or differentiated twice) still gets correct gradients: each
// rule re-expands the fused node into the ops it stands for and differentiates that expansion.
#include "tern/autodiff/autodiff.h"
#include "tern/ops/conv_geometry.h"
#include "tern/ops/fused_program.h"

namespace tern::autodiff {
namespace {

// Broadcasts `v` to `shape` if it differs.
ir::Value* broadcast_to(GradContext& c, ir::Value* v, const Shape& shape) {
  if (v->shape() == shape) return v;
  return c.op("broadcast_to", {v}, {{"shape", shape.dims()}});
}

ir::Value* expand_fused_elementwise(GradContext& c) {
  const ir::Node& n = c.node();
  ops::FusedProgram program;
  std::string problem = ops::decode_fused_program(n.attrs(), n.num_inputs(), &program);
  TERN_CHECK(problem.empty(), "fused_elementwise '", n.name(), "': ", problem);
  DType dtype = c.y()->dtype();
  std::vector<ir::Value*> slot;
  for (int i = 0; i < n.num_inputs(); ++i) slot.push_back(c.x(i));
  for (const ops::FusedInstruction& ins : program.code) {
    const ops::FusedOpcodeInfo* info = ops::fused_opcode_info(static_cast<int64_t>(ins.op));
    if (info->arity == 0) {
      slot.push_back(c.scalar(ins.imm, dtype));
      continue;
    }
    if (ins.op == ops::FusedOpcode::kRoundBF16) {  // the casts it stands for
      ir::Value* low = c.op("cast", {slot[static_cast<size_t>(ins.a)]}, {{"dtype", DType::kBF16}});
      slot.push_back(c.op("cast", {low}, {{"dtype", dtype}}));
      continue;
    }
    ops::Attrs attrs;
    if (info->gelu_approximate) attrs.set("approximate", *info->gelu_approximate);
    std::vector<ir::Value*> args{slot[static_cast<size_t>(ins.a)]};
    if (info->arity == 2) {
      args.push_back(slot[static_cast<size_t>(ins.b)]);
      // The *_grad helpers take same-shaped operands; the arithmetic ops broadcast themselves.
      bool helper = info->op.ends_with("_grad");
      if (helper && args[0]->shape() != args[1]->shape()) {
        Shape s = broadcast_shapes(args[0]->shape(), args[1]->shape());
        args = {broadcast_to(c, args[0], s), broadcast_to(c, args[1], s)};
      }
    }
    slot.push_back(c.op(info->op, std::move(args), std::move(attrs)));
  }
  return broadcast_to(c, slot.back(), c.y()->shape());
}

ir::Value* expand_fused_epilogue(GradContext& c, std::string_view base_op) {
  const ir::Node& n = c.node();
  ops::Attrs base = ops::fused_base_attrs(n.attrs());
  ir::Value* y = c.op(base_op, {c.x(0), c.x(1)}, std::move(base));
  int next = 2;
  if (n.attrs().get_bool("has_bias")) y = c.op("add", {y, c.x(next++)});
  if (n.attrs().get_bool("has_residual")) y = c.op("add", {y, c.x(next++)});
  std::optional<ops::Activation> act = ops::parse_activation(n.attrs().get_string("activation"));
  const ops::FusedOpcodeInfo* f = act ? ops::activation_info(*act).opcode : nullptr;
  if (f) {  // the activation's own graph op (gelu with its `approximate`)
    ops::Attrs attrs;
    if (f->gelu_approximate) attrs.set("approximate", *f->gelu_approximate);
    y = c.op(f->op, {y}, std::move(attrs));
  }
  // fused_conv2d's pool: max_pool2d of all that (its gradient routes dy to each window's max).
  if (const ops::AttrValue* pool = n.attrs().find("pool");
      pool &&
      (std::get<std::string>(*pool) == "max" || std::get<std::string>(*pool) == "max_argmax")) {
    y = c.op("max_pool2d", {y}, ops::fused_pool_attrs(n.attrs()));
  }
  return y;
}

// The gradient reaching fused_elementwise's y: its own, plus, with column_sum, the sum's gradient
// broadcast over y's rows (every row adds into the sum).
ir::Value* fused_elementwise_dy(GradContext& c) {
  if (!c.attrs().get_bool("column_sum") || !c.has_dy(1)) return c.dy(0);
  ir::Value* ds = c.dy(1);
  if (ds->dtype() != c.y()->dtype()) ds = c.op("cast", {ds}, {{"dtype", c.y()->dtype()}});
  ir::Value* spread = broadcast_to(c, ds, c.y()->shape());
  return c.has_dy(0) ? c.op("add", {c.dy(0), spread}) : spread;
}

// Differentiates `expanded` (the node's output recomputed from its inputs) with `dy`, the
// gradient of the node's output. An input that appears more than once gets the whole gradient at
// its first position.
std::vector<ir::Value*> grads_through(GradContext& c, ir::Value* expanded, ir::Value* dy) {
  const ir::Node& n = c.node();
  std::vector<ir::Value*> wrt;
  std::vector<int> position(static_cast<size_t>(n.num_inputs()), -1);
  for (int i = 0; i < n.num_inputs(); ++i) {
    if (!c.needs(i)) continue;
    bool seen = false;
    for (int j = 0; j < i; ++j) seen = seen || (c.needs(j) && c.x(j) == c.x(i));
    if (seen) continue;
    position[static_cast<size_t>(i)] = static_cast<int>(wrt.size());
    wrt.push_back(c.x(i));
  }
  std::vector<ir::Value*> g = gradients(c.graph(), expanded, wrt, dy);
  std::vector<ir::Value*> out(static_cast<size_t>(n.num_inputs()), nullptr);
  for (int i = 0; i < n.num_inputs(); ++i) {
    int p = position[static_cast<size_t>(i)];
    if (p >= 0) out[static_cast<size_t>(i)] = g[static_cast<size_t>(p)];
  }
  return out;
}

}  // namespace

void register_fused_grads(GradRegistry& r) {
  r.add("fused_elementwise", [](GradContext& c) {
    return grads_through(c, expand_fused_elementwise(c), fused_elementwise_dy(c));
  });
  r.add("fused_matmul", [](GradContext& c) {
    return grads_through(c, expand_fused_epilogue(c, "matmul"), c.dy());
  });
  r.add("fused_conv2d", [](GradContext& c) {
    return grads_through(c, expand_fused_epilogue(c, "conv2d"), c.dy());
  });
}

}  // namespace tern::autodiff
