// Executable: compile (clone, passes, order, kernels, memory plan) and run.
#include "tern/runtime/executable.h"

#include <cmath>
#include <unordered_map>
#include <unordered_set>

#include "tern/base/trace.h"
#include "tern/ir/analysis/topo_order.h"
#include "tern/ir/clone.h"
#include "tern/passes/amp.h"
#include "tern/passes/memory_plan.h"
#include "tern/runtime/runtime.h"

namespace tern::runtime {

struct Executable::Step {
  const ir::Node* node = nullptr;
  std::unique_ptr<kernels::Kernel> kernel;
  std::vector<Tensor> inputs;
  std::vector<Tensor> outputs;
  const ops::Attrs* attrs = nullptr;
};

Executable::~Executable() = default;

std::unique_ptr<Executable> Executable::compile(const ir::Graph& graph, VariableStore& vars,
                                                const CompileOptions& options) {
  initialize();
  std::unique_ptr<Executable> exe(new Executable());
  exe->graph_ = ir::clone_graph(graph);
  exe->check_numerics_ = options.check_numerics;
  ir::Graph& g = *exe->graph_;
  if (options.mixed_precision != DType::kF32) {
    passes::AmpOptions amp{options.mixed_precision, [&](std::string_view op, DType d) {
                             return kernels::KernelRegistry::global().has_fast(op, options.device,
                                                                               d);
                           }};
    // mixed_float16 is honoured on devices without fast f16 kernels (reference kernels).
    amp.convert_without_fast_kernel = options.mixed_precision == DType::kF16;
    passes::PassPipeline p;
    p.add(std::make_unique<passes::AutoMixedPrecision>(std::move(amp)));
    exe->pass_stats_ = p.run(g);
  }
  if (options.optimize) {
    passes::PipelineOptions po;
    po.deterministic = options.deterministic;
    po.disabled = options.disabled_passes;
    // Constant folding runs nodes through the same kernels this executable would use.
    EagerOptions eager;
    eager.kernel = options.force_kernel;
    eager.deterministic = options.deterministic;
    po.evaluator = [eager](const ir::Node& n, const std::vector<Tensor>& inputs) {
      return eager_call(n.op_name(), inputs, n.attrs(), eager);
    };
    for (auto& st : passes::default_pipeline(po).run(g)) exe->pass_stats_.push_back(std::move(st));
  }
  std::vector<ir::Node*> order = ir::live_topo_order(g);
  passes::MemoryPlan plan = passes::plan_memory(g, order);
  exe->arena_bytes_ = plan.arena_bytes;
  exe->arena_ = Storage::allocate(plan.arena_bytes);

  std::unordered_map<const ir::Value*, Tensor> bound;
  auto bind_planned = [&](const ir::Value* v) {
    auto it = plan.offsets.find(v);
    if (it != plan.offsets.end()) {
      bound[v] = Tensor(v->dtype(), v->shape(), exe->arena_, it->second);
    } else {
      bound[v] = Tensor(v->dtype(), v->shape());
    }
  };
  // Values no step writes during a run: fed inputs, constants and views of them.
  std::unordered_set<const ir::Value*> immutable, is_output;
  for (const auto& o : g.outputs()) is_output.insert(o.value);
  // Every declared input gets a buffer, even one the outputs do not depend on: feeding it is
  // then a harmless copy rather than an error.
  for (ir::Node* n : g.nodes()) {
    if (n->op_name() != "input") continue;
    Tensor buf(n->output()->dtype(), n->output()->shape());
    exe->inputs_.push_back({n->attrs().get_string("name"), buf});
    bound[n->output()] = buf;
    immutable.insert(n->output());
  }
  for (ir::Node* n : order) {
    const std::string& op = n->op_name();
    if (op == "input") continue;
    if (op == "variable") {
      const std::string& name = n->attrs().get_string("name");
      Tensor& v = vars.get(name);
      if (v.type() != n->output()->type()) {
        throw_error(ErrorCode::kInvalidArgument, "variable '", name, "' is ", v.type().to_string(),
                    " but the graph expects ", n->output()->type().to_string());
      }
      bound[n->output()] = v;
      continue;
    }
    if (op == "constant") {
      bound[n->output()] = n->attrs().get_tensor("value");
      immutable.insert(n->output());
      continue;
    }
    // A reshape of a fed input or a constant (which no step writes) is a view, not a step: e.g.
    // flattening the image batch costs no copy. Not for graph outputs, which must not change
    // when the next batch is fed.
    if ((op == "reshape" || op == "expand_dims" || op == "squeeze") &&
        immutable.count(n->input(0)) && !is_output.count(n->output())) {
      bound[n->output()] = bound.at(n->input(0)).reshape(n->output()->shape());
      immutable.insert(n->output());
      continue;
    }
    Step step;
    step.node = n;
    step.attrs = &n->attrs();
    kernels::KernelSignature sig;
    sig.op = &n->op();
    sig.attrs = &n->attrs();
    for (ir::Value* v : n->inputs()) {
      sig.inputs.push_back(v->type());
      step.inputs.push_back(bound.at(v));
    }
    for (int i = 0; i < n->num_outputs(); ++i) {
      sig.outputs.push_back(n->output(i)->type());
      bind_planned(n->output(i));
      step.outputs.push_back(bound.at(n->output(i)));
    }
    sig.device = options.device;
    sig.deterministic = options.deterministic;
    std::string kernel_name;
    if (options.force_kernel.empty()) {
      kernels::KernelSelection sel = kernels::KernelRegistry::global().select(sig);
      step.kernel = std::move(sel.kernel);
      kernel_name = sel.candidate->name;
    } else {
      for (const auto* c : kernels::KernelRegistry::global().candidates(op, options.device)) {
        if (c->name == options.force_kernel) {
          step.kernel = c->create(sig);
          kernel_name = c->name;
          break;
        }
      }
      if (!step.kernel) {
        throw_error(ErrorCode::kNotFound, "op '", op, "' has no kernel '", options.force_kernel,
                    "'");
      }
    }
    exe->step_info_.push_back({n->name(), op, kernel_name});
    exe->steps_.push_back(std::move(step));
  }
  for (const auto& o : g.outputs()) {
    exe->outputs_.push_back(bound.at(o.value));
    exe->output_names_.push_back(o.name);
  }
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
  for (auto& step : steps_) {
    TERN_TRACE_SCOPE(step.node->name(), "op");
    kernels::KernelContext ctx{step.inputs, step.outputs, *step.attrs};
    step.kernel->run(ctx);
    if (check_numerics_) check_numerics(step);
  }
  ++run_count_;
}

std::vector<Tensor> Executable::run(const Feeds& feeds) {
  for (const auto& [name, t] : feeds) feed(name, t);
  run();
  std::vector<Tensor> out;
  for (const auto& t : outputs_) out.push_back(t.clone());
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
    const Tensor& t = step.outputs[o];
    if (!is_floating(t.dtype())) continue;
    for (int64_t i = 0; i < t.num_elements(); ++i) {
      double v = t.get(i);
      if (std::isfinite(v)) continue;
      std::string ranges;
      for (size_t k = 0; k < step.inputs.size(); ++k) {
        const Tensor& in = step.inputs[k];
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
