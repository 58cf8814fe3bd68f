// Executable: compile (clone, passes, order, placement and kernels, memory plan, binding) and run.
#include "tern/runtime/executable.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <unordered_map>
#include <unordered_set>

#include "tern/base/float_env.h"
#include "tern/base/trace.h"
#include "tern/ir/analysis/topo_order.h"
#include "tern/ir/clone.h"
#include "tern/ops/registry.h"
#include "tern/passes/amp.h"
#include "tern/passes/memory_plan.h"
#include "tern/passes/pass_util.h"
#include "tern/runtime/placement.h"
#include "tern/runtime/runtime.h"

namespace tern::runtime {

struct Executable::Step {
  std::string name;                // the node's name, or "copy:<value>" for a copy step
  const ir::Node* node = nullptr;  // null for a copy step
  std::unique_ptr<kernels::Kernel> kernel;
  std::vector<Tensor> inputs;
  std::vector<Tensor> outputs;
  const ops::Attrs* attrs = nullptr;
  Stream* stream = nullptr;
};

namespace {

const ops::Attrs& no_attrs() {
  static const ops::Attrs attrs;
  return attrs;
}

void run_amp(ir::Graph& g, const CompileOptions& options, std::vector<passes::PassStats>& stats) {
  passes::AmpOptions amp{options.mixed_precision, [&](std::string_view op, DType d) {
                           return kernels::KernelRegistry::global().has_fast(op, options.device, d);
                         }};
  // mixed_float16 is honoured on devices without fast f16 kernels (reference kernels).
  amp.convert_without_fast_kernel = options.mixed_precision == DType::kF16;
  // Not for frozen variables (served models): their executables run on several request threads
  // at once, and the store's copies and versions are not synchronized.
  amp.variable_copies = !options.frozen_variables;
  passes::PassPipeline p;
  p.add(std::make_unique<passes::AutoMixedPrecision>(std::move(amp)));
  stats = p.run(g);
}

// Constant folding runs nodes (on the host) through the same kernels the executable would use.
passes::NodeEvaluator evaluator(const CompileOptions& options) {
  EagerOptions eager;
  eager.kernel = options.force_kernel;
  eager.deterministic = options.deterministic;
  return [eager](const ir::Node& n, const std::vector<Tensor>& inputs) {
    return eager_call(n.op_name(), inputs, n.attrs(), eager);
  };
}

// Whether `op` has a kernel other than ref on `device` (a pass that creates the op runs only then).
bool has_fast_kernel(std::string_view op, DeviceType device) {
  for (const kernels::KernelCandidate* c : kernels::KernelRegistry::global().candidates(op, device))
    if (!c->is_ref()) return true;
  return false;
}

// Whether a candidate other than ref on `device` takes the node, asked by the passes that form
// an op only where it runs fast.
passes::KernelQuery fast_kernel_query(const CompileOptions& options) {
  return [device = options.device, deterministic = options.deterministic](
             const std::string& op, const ops::Attrs& attrs, const std::vector<TensorType>& inputs,
             const std::vector<TensorType>& outputs) {
    return kernels::KernelRegistry::global().takes_fast(
        {&ops::OpRegistry::global().get(op), &attrs, inputs, outputs, device, deterministic});
  };
}

void run_optimizations(ir::Graph& g, const CompileOptions& options,
                       std::vector<passes::PassStats>& stats) {
  passes::PipelineOptions po;
  po.deterministic = options.deterministic;
  po.disabled = options.disabled_passes;
  po.evaluator = evaluator(options);
  po.widen_bf16_contractions = DeviceRegistry::global()
                                   .get(options.device)
                                   .supports(DeviceCapability::kBF16WidenedContractions);
  po.pool_argmax = has_fast_kernel("max_pool2d_argmax", options.device) &&
                   has_fast_kernel("max_pool2d_grad_argmax", options.device);
  po.fast_kernel = fast_kernel_query(options);
  for (auto& st : passes::default_pipeline(po).run(g)) stats.push_back(std::move(st));
}

// fold_frozen_variables' first half: the unwritten variables become constants.
bool freeze_variables(ir::Graph& g, VariableStore& vars) {
  std::map<std::string, std::vector<DType>> written;
  for (ir::Node* n : g.nodes()) add_written_variables(*n, written);
  const std::unordered_set<const ir::Node*> ordered = passes::control_predecessors(g);
  bool changed = false;
  for (ir::Node* n : g.nodes_of("variable")) {
    const std::string& name = n->attrs().get_string("name");
    if (written.count(name) || !vars.has(name) || !n->control_inputs().empty() ||
        ordered.count(n) || vars.get(name).type() != n->output()->type() ||
        !vars.get(name).is_host_accessible()) {  // const_fold evaluates on the host
      continue;
    }
    g.replace_all_uses(n->output(), g.constant(vars.get(name), str_cat(n->name(), "/frozen")));
    g.remove_node(n);
    changed = true;
  }
  return changed;
}

// ResourceExhausted when the planned arena does not fit under the device allocator's limit.
void check_memory_limit(const passes::MemoryPlan& plan, const ir::Graph& g, Allocator& a) {
  MemoryStats m = a.stats();
  if (m.limit == 0 || m.bytes_in_use + plan.arena_bytes <= m.limit) return;
  const ir::Value* largest = nullptr;
  size_t largest_bytes = 0;
  for (const auto& [v, lt] : plan.lifetimes) {
    if (lt.bytes > largest_bytes) largest = v, largest_bytes = lt.bytes;
  }
  std::string biggest =
      largest ? str_cat("; its largest tensor is ", largest->ref(), " ",
                        largest->type().to_string(), " (", format_bytes(largest_bytes), ")")
              : "";
  throw_error(ErrorCode::kResourceExhausted, "graph '", g.name(), "': the planned arena of ",
              format_bytes(plan.arena_bytes), " for ", plan.offsets.size(),
              " tensors does not fit the memory limit of ", a.name(), ", ", format_bytes(m.limit),
              ", with ", format_bytes(m.bytes_in_use), " already in use", biggest,
              " (raise training.memory_limit or lower the batch size)");
}

}  // namespace

void fold_frozen_variables(ir::Graph& graph, VariableStore& vars, const CompileOptions& options) {
  if (!freeze_variables(graph, vars)) return;
  passes::PipelineOptions po;
  po.deterministic = options.deterministic;
  po.disabled = options.disabled_passes;
  po.evaluator = evaluator(options);
  passes::frozen_weights_pipeline(po).run(graph);
}

// Binds every value of the compiled graph to a tensor and builds the steps.
class Executable::Binder {
 public:
  Binder(Executable& exe, const CompileOptions& options, DeviceBackend& device,
         const passes::MemoryPlan& plan)
      : exe_(exe), options_(options), device_(device), plan_(plan) {}

  void bind_inputs(ir::Graph& g) {
    // Every declared input gets a buffer, even one the outputs do not depend on: feeding it is
    // then a harmless copy rather than an error.
    for (ir::Node* n : g.nodes()) {
      if (n->op_name() != "input") continue;
      Tensor buf(n->output()->dtype(), n->output()->shape(), device_);
      exe_.inputs_.push_back({n->attrs().get_string("name"), buf});
      bound_[n->output()] = buf;
      immutable_.insert(n->output());
    }
    for (const auto& o : g.outputs()) is_output_.insert(o.value);
  }

  // Pinned operands (CompileOptions::pin), decided before any step is bound.
  void collect_pins(const std::vector<ir::Node*>& order) {
    if (!options_.pin) return;
    for (ir::Node* n : order) {
      for (int k = 0; k < n->num_outputs(); ++k) {
        Tensor t = options_.pin(*n, true, k);
        if (t.defined()) pinned_[n->output(k)] = t;
      }
    }
    for (ir::Node* n : order) {
      for (int i = 0; i < static_cast<int>(n->inputs().size()); ++i) {
        ir::Value* v = n->input(i);
        Tensor t = options_.pin(*n, false, i);
        if (!t.defined() || pinned_.count(v) || !pinnable(v, t)) continue;
        pinned_[v] = t;
      }
    }
  }

  void bind_variable(ir::Node* n, VariableStore& vars) {
    const std::string& name = n->attrs().get_string("name");
    Tensor& v = vars.get_mutable(name);
    if (v.type() != n->output()->type()) {
      throw_error(ErrorCode::kInvalidArgument, "variable '", name, "' is ", v.type().to_string(),
                  " but the graph expects ", n->output()->type().to_string());
    }
    bound_[n->output()] = v;
    if (options_.frozen_variables) constant_.insert(n->output());
  }

  void bind_variable_copy(ir::Node* n, VariableStore& vars) {
    const std::string& name = n->attrs().get_string("name");
    DType dtype = n->attrs().get_dtype("dtype");
    Tensor& c = vars.copy(name, dtype);
    if (c.type() != n->output()->type()) {
      throw_error(ErrorCode::kInvalidArgument, "the ", dtype_name(dtype), " copy of variable '",
                  name, "' is ", c.type().to_string(), " but the graph expects ",
                  n->output()->type().to_string());
    }
    bound_[n->output()] = c;
    exe_.copies_read_.emplace_back(&vars.entry(name), dtype);
    if (options_.frozen_variables) constant_.insert(n->output());
  }

  // The variables (and copies) that nodes mutating their inputs write, for the store's versions.
  void collect_written(const std::vector<ir::Node*>& order, VariableStore& vars) {
    std::map<std::string, std::vector<DType>> written;
    for (ir::Node* n : order) add_written_variables(*n, written);
    for (auto& [name, copies] : written) {
      exe_.variables_written_.emplace_back(&vars.entry(name), std::move(copies));
    }
  }

  void bind_constant(ir::Node* n) {
    bound_[n->output()] = n->attrs().get_tensor("value");
    immutable_.insert(n->output());
    constant_.insert(n->output());
  }

  // A reshape of a fed input or a constant (which no step writes) is a view, not a step: e.g.
  // flattening the image batch costs no copy. Not for graph outputs, which must not change when
  // the next batch is fed.
  bool bind_view(ir::Node* n) {
    const std::string& op = n->op_name();
    if ((op != "reshape" && op != "expand_dims" && op != "squeeze") ||
        !immutable_.count(n->input(0)) || is_output_.count(n->output())) {
      return false;
    }
    bound_[n->output()] = bound_.at(n->input(0)).reshape(n->output()->shape());
    immutable_.insert(n->output());
    if (constant_.count(n->input(0))) constant_.insert(n->output());
    return true;
  }

  void add_step(ir::Node* n) {
    kernels::KernelSignature sig;
    sig.op = &n->op();
    sig.attrs = &n->attrs();
    for (ir::Value* v : n->inputs()) {
      sig.inputs.push_back(v->type());
      sig.constant_inputs.push_back(constant_.count(v) > 0);
    }
    for (int i = 0; i < n->num_outputs(); ++i) sig.outputs.push_back(n->output(i)->type());
    sig.device = options_.device;
    sig.deterministic = options_.deterministic;
    Placement placed = place_node(sig, device_, options_.force_kernel);
    DeviceBackend& on = *placed.device;
    Step step;
    step.name = n->name();
    step.node = n;
    step.attrs = &n->attrs();
    step.stream = &on.default_stream();
    step.kernel = std::move(placed.selection.kernel);
    for (ir::Value* v : n->inputs()) step.inputs.push_back(operand(v, on));
    for (int i = 0; i < n->num_outputs(); ++i) {
      const ir::Value* out = n->output(i);
      auto it = plan_.offsets.find(out);
      if (auto pin = pinned_.find(out); pin != pinned_.end() && &on == &device_) {
        bound_[out] = pin->second;
      } else if (&on == &device_ && it != plan_.offsets.end()) {
        bound_[out] = Tensor(out->dtype(), out->shape(), exe_.arena_, it->second);
      } else {
        bound_[out] = Tensor(out->dtype(), out->shape(), on);
      }
      step.outputs.push_back(bound_.at(out));
    }
    exe_.step_info_.push_back(
        {n->name(), n->op_name(), placed.selection.candidate->name, on.device().to_string()});
    exe_.steps_.push_back(std::move(step));
  }

  const Tensor& bound(const ir::Value* v) const { return bound_.at(v); }

 private:
  // `v` as a kernel on `on` can read it: bound as is, or a copy (constants copied once now,
  // anything else by a copy step every run, shared by every reader on that device).
  Tensor operand(const ir::Value* v, DeviceBackend& on) {
    const Tensor& t = bound_.at(v);
    if (!needs_copy(t, on)) return t;
    auto key = std::make_pair(v, &on);
    auto it = copies_.find(key);
    if (it != copies_.end()) return it->second;
    Tensor copy(t.dtype(), t.shape(), on);
    if (v->node()->op_name() == "constant") {
      copy.copy_from(t);
    } else {
      Step step;
      step.name = "copy:" + v->ref();
      step.kernel = make_copy_kernel();
      step.attrs = &no_attrs();
      step.stream = &on.default_stream();
      step.inputs.push_back(t);
      step.outputs.push_back(copy);
      exe_.step_info_.push_back({step.name, "copy", copy_kind(t, on), on.device().to_string()});
      exe_.steps_.push_back(std::move(step));
      ++exe_.copy_steps_;
    }
    copies_[key] = copy;
    return copy;
  }

  // A value a step computes, read only by nodes that pin it to the same memory `t`.
  bool pinnable(const ir::Value* v, const Tensor& t) const {
    const std::string& op = v->node()->op_name();
    if (op == "input" || op == "variable" || op == "variable_copy" || op == "constant" ||
        is_output_.count(v) || v->type() != t.type()) {
      return false;
    }
    for (const ir::Use& u : v->uses()) {
      Tensor other = options_.pin(*u.node, false, u.input_index);
      if (!other.defined() || other.raw_data() != t.raw_data()) return false;
    }
    return true;
  }

  struct PairHash {
    size_t operator()(const std::pair<const ir::Value*, DeviceBackend*>& p) const {
      return std::hash<const void*>()(p.first) ^ (std::hash<const void*>()(p.second) << 1);
    }
  };

  Executable& exe_;
  const CompileOptions& options_;
  DeviceBackend& device_;
  const passes::MemoryPlan& plan_;
  std::unordered_map<const ir::Value*, Tensor> bound_;
  std::unordered_map<const ir::Value*, Tensor> pinned_;
  // Values no step writes during a run: fed inputs, constants and views of them.
  std::unordered_set<const ir::Value*> immutable_, is_output_;
  // Values with the same bytes at every run: constants, frozen variables and views of them.
  std::unordered_set<const ir::Value*> constant_;
  std::unordered_map<std::pair<const ir::Value*, DeviceBackend*>, Tensor, PairHash> copies_;
};

Executable::~Executable() = default;

std::unique_ptr<Executable> Executable::compile(const ir::Graph& graph, VariableStore& vars,
                                                const CompileOptions& options) {
  initialize();
  DeviceBackend& device = DeviceRegistry::global().get(options.device);
  std::unique_ptr<Executable> exe(new Executable());
  exe->device_ = &device;
  exe->backends_ = DeviceRegistry::global().backends();
  exe->graph_ = ir::clone_graph(graph);
  exe->check_numerics_ = options.check_numerics;
  ir::Graph& g = *exe->graph_;
  if (options.frozen_variables && options.optimize) fold_frozen_variables(g, vars, options);
  if (options.mixed_precision != DType::kF32) run_amp(g, options, exe->pass_stats_);
  if (options.optimize) run_optimizations(g, options, exe->pass_stats_);
  std::vector<ir::Node*> order = ir::live_topo_order(g);
  passes::MemoryPlan plan = passes::plan_memory(g, order);
  check_memory_limit(plan, g, device.allocator());
  exe->arena_bytes_ = plan.arena_bytes;
  exe->arena_ = Storage::allocate(device, plan.arena_bytes);

  Binder binder(*exe, options, device, plan);
  binder.bind_inputs(g);
  binder.collect_pins(order);
  for (ir::Node* n : order) {
    const std::string& op = n->op_name();
    if (op == "input") continue;
    if (op == "variable") {
      binder.bind_variable(n, vars);
    } else if (op == "variable_copy") {
      binder.bind_variable_copy(n, vars);
    } else if (op == "constant") {
      binder.bind_constant(n);
    } else if (!binder.bind_view(n)) {
      binder.add_step(n);
    }
  }
  binder.collect_written(order, vars);
  exe->vars_ = &vars;
  for (const auto& o : g.outputs()) {
    exe->outputs_.push_back(binder.bound(o.value));
    exe->output_names_.push_back(o.name);
  }
  exe->done_ = device.create_event();
  return exe;
}

int Executable::input_index(std::string_view name) const {
  for (size_t i = 0; i < inputs_.size(); ++i) {
    if (inputs_[i].first == name) return static_cast<int>(i);
  }
  std::string known;
  for (const auto& [n, _] : inputs_) known += (known.empty() ? "" : ", ") + n;
  throw_error(ErrorCode::kInvalidArgument, "graph has no input '", name, "' (inputs: ", known, ")");
}

void Executable::feed_at(int index, const Tensor& value) {
  auto& [name, buf] = inputs_.at(static_cast<size_t>(index));
  if (value.type() != buf.type()) {
    throw_error(ErrorCode::kInvalidArgument, "input '", name, "' expects ", buf.type().to_string(),
                ", fed ", value.type().to_string());
  }
  buf.copy_from(value);
}

void Executable::feed(std::string_view name, const Tensor& value) {
  feed_at(input_index(name), value);
}

void Executable::run() {
  // The calling thread may be new to the backends (a server's request thread): thread counts.
  for (DeviceBackend* backend : backends_) backend->prepare_calling_thread();
  FlushDenormalsScope denormals;  // tern/base/float_env.h
  for (const auto& [entry, dtype] : copies_read_) vars_->refresh_copy(*entry, dtype);
  try {
    for (auto& step : steps_) {
      TERN_TRACE_SCOPE(step.name, "op");
      kernels::KernelContext ctx{step.inputs, step.outputs, *step.attrs, *step.stream};
      step.kernel->run(ctx);
      if (check_numerics_ && step.node) check_numerics(step);
    }
  } catch (...) {
    // A failed run may have written part of a variable and not its copy: all copies go stale.
    for (const auto& [entry, copies] : variables_written_) vars_->written(*entry);
    throw;
  }
  for (const auto& [entry, copies] : variables_written_) vars_->written(*entry, copies);
  if (done_) done_->record(device_->default_stream());
  ++run_count_;
}

void Executable::synchronize() const {
  if (done_) {
    done_->synchronize();
  } else {
    device_->default_stream().synchronize();
  }
}

Tensor Executable::output_host(size_t i) const {
  synchronize();
  return outputs_.at(i).to_host();
}

std::vector<Tensor> Executable::run(const Feeds& feeds) {
  for (const auto& [name, t] : feeds) feed(name, t);
  run();
  std::vector<Tensor> out;
  for (size_t i = 0; i < outputs_.size(); ++i) {
    Tensor host = output_host(i);
    // A host-accessible output is a view of the arena: keep a copy.
    out.push_back(host.storage() == outputs_[i].storage() ? host.clone() : host);
  }
  return out;
}

const Tensor& Executable::output(std::string_view name) const {
  for (size_t i = 0; i < output_names_.size(); ++i) {
    if (output_names_[i] == name) return outputs_[i];
  }
  throw_error(ErrorCode::kInvalidArgument, "graph has no output '", name, "'");
}

void Executable::check_numerics(const Step& step) const {
  for (size_t o = 0; o < step.outputs.size(); ++o) {
    if (!is_floating(step.outputs[o].dtype())) continue;
    step.stream->synchronize();
    const Tensor t = step.outputs[o].to_host();
    for (int64_t i = 0; i < t.num_elements(); ++i) {
      double v = t.get(i);
      if (std::isfinite(v)) continue;
      std::string ranges;
      for (size_t k = 0; k < step.inputs.size(); ++k) {
        const Tensor in = step.inputs[k].to_host();
        double lo = INFINITY, hi = -INFINITY;
        for (int64_t j = 0; j < in.num_elements(); ++j) {
          lo = std::min(lo, in.get(j));
          hi = std::max(hi, in.get(j));
        }
        ranges += str_cat(k ? ", " : "", in.type().to_string(), " in [", lo, ", ", hi, "]");
      }
      throw_error(ErrorCode::kInvalidArgument, "check_numerics: node '", step.node->name(),
                  "' (op ", step.node->op_name(), ") produced ", std::isnan(v) ? "NaN" : "Inf",
                  " in output ", o, " at element ", i, " on run ", run_count_,
                  "; inputs: ", ranges);
    }
  }
}

}  // namespace tern::runtime
