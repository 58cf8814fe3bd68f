// Algebraic simplification: one rule function per identity family, applied to fixpoint.
#include "tern/passes/simplify.h"

#include <cmath>
#include <numeric>

#include "tern/ir/analysis/topo_order.h"
#include "tern/passes/pass_util.h"

namespace tern::passes {
namespace {

struct Rewriter {
  ir::Graph& g;
  bool bit_exact;

  // `v` is a splat constant equal to `x` (for x == 0: `zero_sign` -1 requires -0, +1 requires
  // +0, 0 accepts either).
  static bool is_splat(const ir::Value* v, double x, int zero_sign = 0) {
    std::optional<double> s = constant_splat(v);
    if (!s || *s != x) return false;
    if (x == 0 && zero_sign != 0 && is_floating(v->dtype()))
      return std::signbit(*s) == (zero_sign < 0);
    return true;
  }

  // x op c -> x, when the result has x's type.
  static ir::Value* identity_operand(const ir::Node& n, int keep, int constant, double c,
                                     int zero_sign = 0) {
    if (n.input(keep)->type() != n.output()->type()) return nullptr;
    return is_splat(n.input(constant), c, zero_sign) ? n.input(keep) : nullptr;
  }

  ir::Value* arithmetic(const ir::Node& n) {
    const std::string& op = n.op_name();
    if (op == "add") {
      // x + (+0) turns -0 into +0: in bit-exact mode only -0 qualifies.
      int sign = bit_exact ? -1 : 0;
      if (ir::Value* v = identity_operand(n, 0, 1, 0, sign)) return v;
      return identity_operand(n, 1, 0, 0, sign);
    }
    if (op == "sub") return identity_operand(n, 0, 1, 0, bit_exact ? 1 : 0);
    if (op == "mul") {
      if (ir::Value* v = identity_operand(n, 0, 1, 1)) return v;
      return identity_operand(n, 1, 0, 1);
    }
    if (op == "div") return identity_operand(n, 0, 1, 1);
    if (op == "pow") {
      if (ir::Value* v = identity_operand(n, 0, 1, 1)) return v;
      if (!bit_exact && n.input(0)->type() == n.output()->type() && is_splat(n.input(1), 2)) {
        return g.add("square", {n.input(0)}, {}, n.name());
      }
    }
    if (op == "neg") {
      const ir::Node& p = *n.input(0)->node();
      if (p.op_name() == "neg" && p.control_inputs().empty()) return p.input(0);
    }
    return nullptr;
  }

  // True if converting `from` -> `to` -> `from` gives back every value of `from`.
  static bool widens(DType from, DType to) {
    if (from == to) return true;
    switch (from) {
      case DType::kF32:
        return to == DType::kF64;
      case DType::kBF16:
      case DType::kF16:
        return to == DType::kF32 || to == DType::kF64;
      case DType::kI8:
        return to == DType::kI32 || to == DType::kI64 || to == DType::kF32 || to == DType::kF64;
      case DType::kU8:
        return to == DType::kI32 || to == DType::kI64 || to == DType::kF32 || to == DType::kF64;
      case DType::kI32:
        return to == DType::kI64 || to == DType::kF64;
      case DType::kBool:
        return to != DType::kBool;
      default:
        return false;
    }
  }

  static ir::Value* cast(const ir::Node& n) {
    if (n.op_name() != "cast") return nullptr;
    ir::Value* x = n.input(0);
    if (x->dtype() == n.output()->dtype()) return x;
    const ir::Node& p = *x->node();
    if (p.op_name() == "cast" && p.control_inputs().empty() &&
        p.input(0)->type() == n.output()->type() && widens(n.output()->dtype(), x->dtype())) {
      return p.input(0);
    }
    return nullptr;
  }

  static bool reshape_like(const ir::Node& n) {
    const std::string& op = n.op_name();
    return op == "reshape" || op == "squeeze" || op == "expand_dims";
  }

  ir::Value* layout(const ir::Node& n) {
    const std::string& op = n.op_name();
    ir::Value* x = n.input(0);
    if (reshape_like(n) || op == "broadcast_to") {
      if (x->shape() == n.output()->shape()) return x;
    }
    if (reshape_like(n) && reshape_like(*x->node()) && x->node()->control_inputs().empty()) {
      ir::Value* y = x->node()->input(0);
      if (y->shape() == n.output()->shape()) return y;
      return g.add("reshape", {y}, {{"shape", n.output()->shape().dims()}}, n.name());
    }
    if (op == "transpose") {
      std::vector<int64_t> q = perm_of(n);
      if (is_identity(q)) return x;
      const ir::Node& p = *x->node();
      if (p.op_name() == "transpose" && p.control_inputs().empty()) {
        std::vector<int64_t> inner = perm_of(p), composed(q.size());
        for (size_t i = 0; i < q.size(); ++i) composed[i] = inner[static_cast<size_t>(q[i])];
        if (is_identity(composed)) return p.input(0);
        return g.add("transpose", {p.input(0)}, {{"perm", composed}}, n.name());
      }
    }
    return nullptr;
  }

  // The permutation of a transpose node, with [] (reverse) and negative axes normalized.
  static std::vector<int64_t> perm_of(const ir::Node& n) {
    std::vector<int64_t> perm = n.attrs().get_ints("perm");
    int64_t r = n.input(0)->shape().rank();
    if (perm.empty()) {
      for (int64_t i = r - 1; i >= 0; --i) perm.push_back(i);
    }
    for (int64_t& p : perm) p = p < 0 ? p + r : p;
    return perm;
  }

  static bool is_identity(const std::vector<int64_t>& perm) {
    for (size_t i = 0; i < perm.size(); ++i) {
      if (perm[i] != static_cast<int64_t>(i)) return false;
    }
    return true;
  }

  // max_pool2d(relu(x)) -> relu(max_pool2d(x)) when the pool is relu's only reader: the two
  // commute (relu is monotonic; both keep NaN), and the relu then reads a quarter of the bytes
  // (2x2 windows) and no longer sits between a convolution and its pool. Not in bit-exact mode
  // (a window of -0 and +0 may give either zero).
  ir::Value* pooling(const ir::Node& n) {
    if (bit_exact || n.op_name() != "max_pool2d") return nullptr;
    const ir::Value* r = n.input(0);
    const ir::Node& relu = *r->node();
    if (relu.op_name() != "relu" || !relu.control_inputs().empty() || r->uses().size() != 1 ||
        is_graph_output(g, r)) {
      return nullptr;
    }
    ir::Value* pooled = g.add("max_pool2d", {relu.input(0)}, n.attrs(), str_cat(n.name(), "/pool"));
    return g.add("relu", {pooled}, {}, str_cat(n.name(), "/relu"));
  }

  ir::Value* rewrite(const ir::Node& n) {
    if (ir::Value* v = arithmetic(n)) return v;
    if (ir::Value* v = cast(n)) return v;
    if (ir::Value* v = pooling(n)) return v;
    return layout(n);
  }
};

}  // namespace

bool Simplify::run(ir::Graph& g) {
  Rewriter rw{g, bit_exact_};
  bool changed = false;
  for (int round = 0; round < 16; ++round) {
    bool round_changed = false;
    std::unordered_set<const ir::Node*> ordered = control_predecessors(g);
    for (ir::Node* n : ir::topo_order(g)) {
      if (!is_pure(*n) || n->num_outputs() != 1 || n->num_inputs() == 0) continue;
      if (!n->control_inputs().empty()) continue;
      ir::Value* out = n->output();
      if (out->uses().empty() && !is_graph_output(g, out)) continue;
      ir::Value* replacement = rw.rewrite(*n);
      if (!replacement || replacement == out) continue;
      if (ordered.count(n)) {
        // Nodes waited for `n` (a read before an update). A variable has no read event of its
        // own to wait for, so that rewrite is dropped; any other replacement inherits the wait.
        ir::Node* r = replacement->node();
        if (r->op_name() == "variable") continue;
        inherit_control_edges(g, {n}, r);
      }
      g.replace_all_uses(out, replacement);
      g.remove_node(n);
      round_changed = true;
    }
    if (!round_changed) break;
    changed = true;
  }
  return changed;
}

}  // namespace tern::passes
