// Automatic mixed precision: classify, paint follow-list ops between allow-listed ones, rewrite.
#include "tern/passes/amp.h"

#include "tern/ops/fused_program.h"

#include <map>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "tern/ir/analysis/topo_order.h"
#include "tern/ops/optimizer_layout.h"
#include "tern/passes/pass_util.h"

namespace tern::passes {
namespace {

const std::unordered_set<std::string_view>& allow_list() {
  static const std::unordered_set<std::string_view> ops = {
      "matmul",       "fused_matmul",          "conv2d",
      "fused_conv2d", "conv2d_backprop_input", "conv2d_backprop_filter",
      "attention",    "attention_grad"};
  return ops;
}

// Ops that run in 16 bits between 16-bit producers: the fusable ones the opcode table marks
// (bf16_follows), and these data-movement and pooling ops.
const std::unordered_set<std::string_view>& follow_list() {
  static const std::unordered_set<std::string_view> ops = [] {
    std::unordered_set<std::string_view> set = {
        "max_pool2d",  "max_pool2d_grad", "avg_pool2d", "avg_pool2d_grad",
        "dropout",     "dropout_apply",   "reshape",    "transpose",
        "expand_dims", "squeeze",         "slice",      "concat",
        "pad",         "broadcast_to",    "softmax",    "softmax_grad"};
    for (const auto& info : ops::fused_opcodes()) {
      if (info.bf16_follows) set.insert(info.op);
    }
    return set;
  }();
  return ops;
}

// Ops that keep some of their tensors f32 when converted: the inputs first_f32..last_f32 are read
// as they are, and only the first low_outputs outputs are 16-bit.
//   - batch norm (follow-list ops in this form): its parameters and statistics stay f32, only
//     the activation inputs are cast down (x, dy, and the relu gate y of a batch_norm_grad with a
//     folded relu) and only y / dx is 16-bit;
//   - attention (allow-listed): its saved softmax (output 1) stays f32 and attention_grad reads
//     it (input 4) as it is.
struct MixedForm {
  int first_f32, last_f32, low_outputs;
};

const std::unordered_map<std::string_view, MixedForm>& mixed_list() {
  static const std::unordered_map<std::string_view, MixedForm> ops = {
      {"batch_norm_training", {1, 2, 1}},
      {"batch_norm_grad", {2, 4, 1}},
      {"attention", {0, -1, 1}},  // every input cast down
      {"attention_grad", {4, 4, 3}}};
  return ops;
}

// Whether input `i` of `n` is cast down when `n` is converted.
bool low_input(const ir::Node& n, int i) {
  auto it = mixed_list().find(n.op_name());
  return it == mixed_list().end() || i < it->second.first_f32 || i > it->second.last_f32;
}

// Whether output `k` of `n` is 16-bit once `n` is converted.
bool low_output(const ir::Node& n, int k) {
  auto it = mixed_list().find(n.op_name());
  return it == mixed_list().end() || k < it->second.low_outputs;
}

enum class Kind { kNone, kAllow, kFollow };

bool all_float_f32(const ir::Node& n) {
  bool any = false;
  for (const ir::Value* v : n.inputs()) {
    if (!is_floating(v->dtype())) continue;
    if (v->dtype() != DType::kF32) return false;
    any = true;
  }
  for (int k = 0; k < n.num_outputs(); ++k) {
    DType d = n.output(k)->dtype();
    if (is_floating(d) && d != DType::kF32) return false;
  }
  return any;
}

class Rewriter {
 public:
  Rewriter(ir::Graph& g, const AmpOptions& o) : g_(g), o_(o) {}

  bool run() {
    std::vector<ir::Node*> order = ir::topo_order(g_);
    std::unordered_map<const ir::Node*, Kind> kind;
    std::unordered_set<const ir::Node*> fwd, bwd;
    for (ir::Node* n : order) {
      Kind k = classify(*n);
      kind[n] = k;
      if (k == Kind::kAllow) {
        fwd.insert(n);
      } else if (k == Kind::kFollow) {
        for (int i = 0; i < n->num_inputs(); ++i) {
          const ir::Value* v = n->input(i);
          if (is_floating(v->dtype()) && low_input(*n, i) && fwd.count(v->node()) &&
              low_output(*v->node(), v->index())) {
            fwd.insert(n);
            break;
          }
        }
      }
    }
    for (auto it = order.rbegin(); it != order.rend(); ++it) {
      ir::Node* n = *it;
      if (kind[n] == Kind::kAllow) {
        bwd.insert(n);
      } else if (kind[n] == Kind::kFollow && reaches(*n, bwd)) {
        bwd.insert(n);
      }
    }
    bool changed = false;
    for (ir::Node* n : order) {
      Kind k = kind[n];
      if (k == Kind::kAllow || (k == Kind::kFollow && fwd.count(n) && bwd.count(n))) {
        convert(n);
        changed = true;
      }
    }
    // bf16 only, as store_f32 below (the reduction's fast kernel reads bf16, not f16).
    if (o_.dtype == DType::kBF16) {
      for (ir::Node* c : up_casts_) reduce_without_cast(c);
    }
    for (ir::Node* c : up_casts_) {
      if (c->output()->uses().empty() && !is_graph_output(g_, c->output()) &&
          control_successors_of(g_, {c}).empty()) {
        g_.remove_node(c);
      }
    }
    if (o_.dtype == DType::kBF16) {  // f16 keeps Keras' form: its loss scaling watches f16 values
      for (ir::Node* m : converted_matmuls_) store_f32(m);
    }
    if (o_.variable_copies) changed |= use_variable_copies();
    return changed;
  }

 private:
  Kind classify(const ir::Node& n) const {
    const std::string& op = n.op_name();
    bool allow = allow_list().count(op) > 0;
    if (!allow && !follow_list().count(op) && !mixed_list().count(op)) return Kind::kNone;
    if (n.op().has_trait(ops::kTraitStateful) || n.op().has_trait(ops::kTraitMutatesInputs))
      return Kind::kNone;
    if (!all_float_f32(n) || !n.op().claims(o_.dtype)) return Kind::kNone;
    if (o_.has_fast_kernel) {
      bool fast16 = o_.has_fast_kernel(op, o_.dtype);
      if (allow && !fast16 && !o_.convert_without_fast_kernel) return Kind::kNone;
      if (!allow && !fast16 && o_.has_fast_kernel(op, DType::kF32)) return Kind::kNone;
    }
    return allow ? Kind::kAllow : Kind::kFollow;
  }

  // True if some 16-bit output of `n` is read as a 16-bit input by a node in `set`. Integer
  // outputs (dropout's mask) carry no precision: a converted reader of one does not pull `n` in.
  static bool reaches(const ir::Node& n, const std::unordered_set<const ir::Node*>& set) {
    for (int k = 0; k < n.num_outputs(); ++k) {
      if (!low_output(n, k) || !is_floating(n.output(k)->dtype())) continue;
      for (const ir::Use& u : n.output(k)->uses()) {
        if (set.count(u.node) && low_input(*u.node, u.input_index)) return true;
      }
    }
    return false;
  }

  // The 16-bit twin of f32 value `v`: a converted op's own result, or a (shared) cast.
  ir::Value* low(ir::Value* v) {
    auto it = low_.find(v);
    if (it != low_.end()) return it->second;
    ir::Value* c = g_.add("cast", {v}, {{"dtype", o_.dtype}},
                          str_cat(v->node()->name(), "/amp_", dtype_name(o_.dtype)));
    low_[v] = c;
    return c;
  }

  void convert(ir::Node* n) {
    std::vector<ir::Value*> inputs;
    for (int i = 0; i < n->num_inputs(); ++i) {
      ir::Value* v = n->input(i);
      inputs.push_back(v->dtype() == DType::kF32 && low_input(*n, i) ? low(v) : v);
    }
    ops::Attrs attrs = n->attrs();
    // Weight gradients: 16-bit inputs, accumulated and stored in f32 (no cast back up).
    if (n->op_name() == "conv2d_backprop_filter") attrs.set("dfilter_dtype", std::string("f32"));
    ir::Node* m =
        g_.add_node(n->op_name(), inputs, attrs, str_cat(n->name(), "/", dtype_name(o_.dtype)));
    if (n->op_name() == "matmul") converted_matmuls_.push_back(m);
    inherit_control_edges(g_, {n}, m);
    for (int k = 0; k < n->num_outputs(); ++k) {
      ir::Value* old = n->output(k);
      ir::Value* lo = m->output(k);
      if (lo->dtype() == old->dtype()) {
        g_.replace_all_uses(old, lo);
        continue;
      }
      ir::Value* up =
          g_.add("cast", {lo}, {{"dtype", DType::kF32}}, str_cat(n->name(), "/amp_f32"));
      g_.replace_all_uses(old, up);
      low_[up] = lo;
      up_casts_.push_back(up->node());
    }
    g_.remove_node(n);
  }

  // A sum or mean reading the cast back up `c` of a 16-bit value reads the value itself and
  // returns f32 (out_dtype = "f32": the same f32 sums, no cast pass): the bias gradients of bf16
  // layers ([tokens, features] -> [features]), 0.7 ms of cast per Transformer feed-forward layer.
  void reduce_without_cast(ir::Node* c) {
    ir::Value* lo = c->input(0);
    std::vector<ir::Node*> readers;
    for (const ir::Use& u : c->output()->uses()) readers.push_back(u.node);
    for (ir::Node* r : readers) {
      if ((r->op_name() != "sum" && r->op_name() != "mean") ||
          !r->attrs().get_string("out_dtype").empty()) {
        continue;
      }
      ops::Attrs attrs = r->attrs();
      attrs.set("out_dtype", std::string("f32"));
      ir::Node* m = g_.add_node(r->op_name(), {lo}, std::move(attrs),
                                str_cat(r->name(), "/", dtype_name(o_.dtype), "_f32"));
      inherit_control_edges(g_, {r}, m);
      g_.replace_all_uses(r->output(), m->output());
      g_.remove_node(r);
    }
  }

  // A converted matmul whose 16-bit result is read only through its cast back up (a weight
  // gradient on its way to the f32 optimizer, logits on their way to an f32 loss) stores f32
  // itself (out_dtype = "f32"): accumulated in f32 and rounded once, with no cast pass.
  void store_f32(ir::Node* m) {
    ir::Value* lo = m->output();
    if (is_graph_output(g_, lo) || lo->uses().empty()) return;
    std::vector<ir::Node*> ups;
    for (const ir::Use& u : lo->uses()) {
      const ir::Node& c = *u.node;
      if (c.op_name() != "cast" || c.attrs().get_dtype("dtype") != DType::kF32 ||
          is_graph_output(g_, c.output())) {
        return;
      }
      ups.push_back(u.node);
    }
    if (!control_successors_of(g_, ups).empty()) return;
    ops::Attrs attrs = m->attrs();
    attrs.set("out_dtype", std::string("f32"));
    ir::Node* f32 = g_.add_node("matmul", m->inputs(), attrs, str_cat(m->name(), "_f32"));
    inherit_control_edges(g_, {m}, f32);
    for (ir::Node* up : ups) {
      g_.replace_all_uses(up->output(), f32->output());
      g_.remove_node(up);
    }
    g_.remove_node(m);
  }

  // Casts down of f32 variables (or of a reshape of one) read the store's 16-bit copy instead, and
  // the optimizer update writing the variable writes the copy (its attribute `copies`). Skipped
  // where a reader of the cast is not ordered before the update (it would read the updated copy)
  // or where the variable has another writer than one optimizer update (an assign: no copy).
  bool use_variable_copies() {
    std::unordered_map<const ir::Value*, std::vector<ir::Node*>> writers;
    std::vector<ir::Node*> casts;
    for (ir::Node* n : ir::topo_order(g_)) {
      if (n->op().has_trait(ops::kTraitMutatesInputs)) {
        for (ir::Value* v : n->inputs()) {
          auto& w = writers[v];
          if (w.empty() || w.back() != n) w.push_back(n);
        }
      }
      if (n->op_name() == "cast" && n->attrs().get_dtype("dtype") == o_.dtype &&
          n->input(0)->dtype() == DType::kF32 && !is_graph_output(g_, n->output())) {
        casts.push_back(n);
      }
    }
    std::unordered_map<const ir::Node*, std::unordered_set<const ir::Node*>> before;
    std::vector<ir::Node*> updates;  // in order of their first copy
    std::unordered_map<const ir::Node*, std::map<int, ir::Value*>> update_copies;
    std::unordered_map<const ir::Node*, ir::Value*> copy_of;  // variable node -> its copy
    bool changed = false;
    for (ir::Node* c : casts) {
      ir::Node* view = c->input(0)->node()->op_name() == "reshape" ? c->input(0)->node() : nullptr;
      ir::Value* var = view ? view->input(0) : c->input(0);
      if (var->node()->op_name() != "variable") continue;
      ir::Node* update = nullptr;
      int param = -1;
      auto w = writers.find(var);
      if (w != writers.end()) {
        if (w->second.size() != 1 || !ops::is_optimizer_update(w->second[0]->op_name())) continue;
        update = w->second[0];
        param = param_index(*update, var);
        if (param < 0) continue;
        auto [it, fresh] = before.try_emplace(update);
        if (fresh) it->second = ir::ancestors(update);
        bool ordered = true;
        for (const ir::Use& u : c->output()->uses()) ordered &= it->second.count(u.node) > 0;
        for (const ir::Node* s : control_successors_of(g_, {c})) {
          ordered &= s == update || it->second.count(s) > 0;
        }
        if (!ordered) continue;
      }
      auto [cit, first] = copy_of.try_emplace(var->node());
      if (first) {
        const std::string& name = var->node()->attrs().get_string("name");
        cit->second = g_.add("variable_copy", {},
                             {{"name", name},
                              {"dtype", o_.dtype},
                              {"shape", var->node()->attrs().get_ints("shape")}},
                             str_cat(name, "/copy_", dtype_name(o_.dtype)));
      }
      ir::Value* replacement = cit->second;
      if (view) {
        replacement = g_.add("reshape", {replacement}, view->attrs(),
                             str_cat(view->name(), "/", dtype_name(o_.dtype)));
      }
      inherit_control_edges(g_, {c}, replacement->node());
      g_.replace_all_uses(c->output(), replacement);
      g_.remove_node(c);
      // A reshape only the cast read is dead, and a dead reader of the variable is not ordered
      // before the update (the verifier's rule for variable readers).
      if (view && view->output()->uses().empty() && !is_graph_output(g_, view->output()) &&
          control_successors_of(g_, {view}).empty()) {
        g_.remove_node(view);
      }
      changed = true;
      if (update) {
        if (!update_copies.count(update)) updates.push_back(update);
        update_copies[update][param] = cit->second;
      }
    }
    for (ir::Node* u : updates) add_copies(u, update_copies[u]);
    return changed;
  }

  // The parameter index at which `var` is an input of `update`, or -1 unless it is exactly one
  // input there (a parameter, not a gradient or slot).
  static int param_index(const ir::Node& update, const ir::Value* var) {
    ops::OptimizerLayout l = ops::optimizer_layout(update.op_name(), update.attrs());
    if (l.num_copies() > 0) return -1;
    int param = -1, count = 0;
    for (int i = 0; i < update.num_inputs(); ++i) {
      if (update.input(i) != var) continue;
      ++count;
      if (i >= l.param(0) && i < l.param(0) + l.num_params) param = i - l.param(0);
    }
    return count == 1 ? param : -1;
  }

  // Rebuilds optimizer update `u` so that it also writes the copies (parameter index -> copy).
  void add_copies(ir::Node* u, const std::map<int, ir::Value*>& copies) {
    ops::OptimizerLayout l = ops::optimizer_layout(u->op_name(), u->attrs());
    std::vector<ir::Value*> inputs(u->inputs().begin(), u->inputs().begin() + l.copy(0));
    std::vector<int64_t> indices;
    for (const auto& [param, copy] : copies) {
      indices.push_back(param);
      inputs.push_back(copy);
    }
    if (l.has_apply) inputs.push_back(u->input(l.apply()));
    ops::Attrs attrs = u->attrs();
    attrs.set("copies", indices);
    ir::Node* m =
        g_.add_node(u->op_name(), inputs, std::move(attrs), str_cat(u->name(), "/copies"));
    inherit_control_edges(g_, {u}, m);
    g_.remove_node(u);
  }

  ir::Graph& g_;
  const AmpOptions& o_;
  std::vector<ir::Node*> converted_matmuls_;
  std::unordered_map<const ir::Value*, ir::Value*> low_;
  std::vector<ir::Node*> up_casts_;
};

}  // namespace

bool AutoMixedPrecision::run(ir::Graph& g) {
  TERN_CHECK_ARG(options_.dtype == DType::kBF16 || options_.dtype == DType::kF16,
                 "amp: the compute dtype must be bf16 or f16, got ", dtype_name(options_.dtype));
  return Rewriter(g, options_).run();
}

DType policy_compute_dtype(std::string_view policy) {
  if (policy == "float32") return DType::kF32;
  if (policy == "mixed_bfloat16") return DType::kBF16;
  if (policy == "mixed_float16") return DType::kF16;
  throw_error(ErrorCode::kInvalidArgument, "precision policy '", policy,
              "' is not one of float32, mixed_bfloat16, mixed_float16");
}

}  // namespace tern::passes
