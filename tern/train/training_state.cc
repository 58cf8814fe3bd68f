// Step graphs: forward, loss, metrics, gradients, optimizer update; compiled once per signature.
#include "tern/train/training_state.h"

#include "tern/runtime/runtime.h"

#include <algorithm>

#include "tern/autodiff/autodiff.h"
#include "tern/base/logging.h"
#include "tern/passes/simplify.h"

namespace tern::train {
namespace {

std::string step_key(StepKind kind, const TensorType& x, const TensorType* y) {
  return str_cat(static_cast<int>(kind), ":", x.to_string(), ":", y ? y->to_string() : "-");
}

ir::Value* scalar_input(ir::Graph& g, const std::string& name, DType d) {
  return g.input(name, {d, Shape{}});
}

constexpr const char* kFiniteOutput = "loss_scale/finite";

// Replaces `grads` by their sums over the workers: buckets in the order backward produces the
// gradients (`produced_at`: the id of the node autodiff made for each; the step runs ready nodes
// in id order, so backward's first gradients have the lowest ids), one
// all_reduce_start / all_reduce_wait pair per bucket.
void all_reduce_gradients(ir::Graph& g, dist::DataParallel& dp, std::vector<ir::Value*>& grads,
                          const std::vector<int64_t>& produced_at) {
  std::vector<size_t> ready(grads.size());
  for (size_t i = 0; i < ready.size(); ++i) ready[i] = i;
  std::stable_sort(ready.begin(), ready.end(),
                   [&](size_t a, size_t b) { return produced_at[a] < produced_at[b]; });
  std::vector<TensorType> types;
  for (size_t i : ready) types.push_back(grads[i]->type());
  dist::GradientReducer& reducer = dp.reducer(types);
  for (size_t b = 0; b < reducer.buckets().size(); ++b) {
    const dist::Bucket& bucket = reducer.buckets()[b];
    std::vector<ir::Value*> members;
    for (int m : bucket.members) members.push_back(grads[ready[static_cast<size_t>(m)]]);
    ops::Attrs attrs{{"group", reducer.id()}, {"bucket", static_cast<int64_t>(b)}};
    ir::Value* token = g.add("all_reduce_start", members, attrs, str_cat("all_reduce/start", b));
    std::vector<ir::Value*> wait_inputs{token};
    wait_inputs.insert(wait_inputs.end(), members.begin(), members.end());
    ir::Node* wait =
        g.add_node("all_reduce_wait", wait_inputs, attrs, str_cat("all_reduce/wait", b));
    for (size_t m = 0; m < bucket.members.size(); ++m)
      grads[ready[bucket.members[m]]] = wait->output(static_cast<int>(m));
  }
}

}  // namespace

std::unique_ptr<ir::Graph> build_step_graph(nn::Model& model, TrainingState& state, StepKind kind,
                                            const TensorType& x_type, const TensorType* y_type) {
  const char* names[] = {"train_step", "accumulate_step", "eval_step", "predict_step"};
  auto g = std::make_unique<ir::Graph>(names[static_cast<int>(kind)]);
  bool training = kind == StepKind::kTrain || kind == StepKind::kAccumulate;
  ir::Value* x = g->input("x", x_type);
  ir::Value* y = y_type ? g->input("y", *y_type) : nullptr;
  std::vector<std::pair<std::string, ir::Value*>> updates;
  nn::LayerContext ctx{*g};
  ctx.training = training;
  ctx.updates = &updates;
  if (training) ctx.rng_offset = scalar_input(*g, "rng_offset", DType::kI64);
  std::vector<ir::Value*> outs = model.forward(ctx, std::vector<ir::Value*>{x});
  TERN_CHECK_ARG(outs.size() == 1, "model '", model.name(), "' has ", outs.size(),
                 " outputs; training supports single-output models");
  ir::Value* pred = outs[0];
  if (pred->dtype() != DType::kF32)
    pred = g->add("cast", {pred}, {{"dtype", DType::kF32}}, "output_f32");
  if (kind == StepKind::kPredict) {
    g->add_output("pred", pred);
    return g;
  }
  ir::Value* loss = state.loss->call(*g, y, pred);
  g->add_output("loss", loss);
  for (auto& m : state.metrics) {
    std::vector<ir::Value*> stats = m->batch_stats(*g, y, pred);
    for (size_t i = 0; i < stats.size(); ++i) g->add_output(str_cat(m->name(), "/", i), stats[i]);
  }
  if (!training) return g;
  // The forward graph simplified before it is differentiated (the compile pipeline simplifies
  // again after): a rewrite that changes what the gradient ops read applies only while the
  // forward values have no other readers. max_pool2d(relu(x)) becomes relu(max_pool2d(x)), so
  // relu's gradient runs on the pooled quarter of the bytes and the convolution before it loses
  // its relu pass (the W3 CNN's step: 8.5 -> 7.2 ms). Not in deterministic (bit-exact) mode.
  passes::Simplify(state.compile_options.deterministic).run(*g);

  std::vector<nn::WeightSpec> weights = model.trainable_weights();
  TERN_CHECK_ARG(!weights.empty(), "model '", model.name(), "' has no trainable weights");
  std::vector<ir::Value*> params;
  for (const auto& w : weights) params.push_back(g->variable(w.name, w.type));
  runtime::VariableStore& store = model.variables();
  // Loss scaling: differentiate loss * S, unscale right away (accumulators hold f32 unscaled sums;
  // a non-finite micro-batch makes the sum non-finite and the update step skips it).
  std::optional<optim::LossScaleGraph> scaling;
  if (state.loss_scale) scaling.emplace(*g, store, *state.loss_scale);
  dist::DataParallel* dp = state.data_parallel.get();
  // Each worker's loss is its batch mean / N, so summing the gradients over workers gives the
  // gradient of the global batch mean (exact for power-of-two N: scaling by 2^-k is exact).
  ir::Value* objective = loss;
  if (dp && dp->size() > 1) {
    objective = g->add("mul", {loss, g->scalar(loss->dtype(), 1.0 / dp->size())}, {},
                       "data_parallel/loss_share");
  }
  std::vector<ir::Value*> grads =
      autodiff::gradients(*g, scaling ? scaling->scale_loss(objective) : objective, params);
  std::vector<int64_t> produced_at;
  for (ir::Value* grad : grads) produced_at.push_back(static_cast<int64_t>(grad->node()->id()));
  if (scaling) grads = scaling->unscale(grads);
  int k = state.gradient_accumulation_steps;
  if (k > 1) {
    // Sum gradients into accumulators; the train step adds the last micro-batch, averages and
    // applies the update, then clears the accumulators.
    for (size_t i = 0; i < weights.size(); ++i) {
      std::string acc_name = "accumulator/" + weights[i].name;
      store.create(acc_name, Tensor::zeros(weights[i].type.dtype, weights[i].type.shape));
      ir::Value* acc = g->variable(acc_name, weights[i].type);
      ir::Value* sum = g->add("add", {acc, grads[i]}, {}, "accumulate/add");
      if (kind == StepKind::kAccumulate) {
        g->add_node("assign", {acc, sum}, {}, "accumulate/assign")->add_control_input(sum->node());
      } else {
        grads[i] = sum;
        ir::Node* clear =
            g->add_node("assign", {acc, g->constant(Tensor::zeros(acc->dtype(), acc->shape()))}, {},
                        "accumulate/clear");
        clear->add_control_input(sum->node());
      }
    }
  }
  if (kind == StepKind::kTrain && dp && dp->size() > 1)
    all_reduce_gradients(*g, *dp, grads, produced_at);
  if (kind == StepKind::kTrain && k > 1) {
    for (auto& grad : grads)
      grad = g->add("mul", {grad, g->scalar(grad->dtype(), 1.0 / k)}, {}, "accumulate/mean");
  }
  if (kind == StepKind::kTrain) {
    std::vector<optim::ParamGrad> pg;
    for (size_t i = 0; i < weights.size(); ++i)
      pg.push_back({weights[i].name, params[i], grads[i]});
    ir::Value* lr = scalar_input(*g, "lr", DType::kF32);
    ir::Value* step = scalar_input(*g, "step", DType::kI64);
    ir::Value* finite = scaling ? scaling->finite(grads) : nullptr;
    state.optimizer->apply_gradients(*g, store, pg, lr, step, finite);
    if (finite) {
      scaling->update(finite);
      g->add_output(kFiniteOutput, finite);
    }
  }
  // Moving statistics (batch norm) and other layer-requested variable updates.
  for (const auto& [name, value] : updates) {
    const Tensor& var = store.get(name);
    ir::Value* v = g->variable(name, var.type());
    ir::Node* assign = g->add_node("assign", {v, value}, {}, "update/" + name);
    for (const ir::Use& u : v->uses()) {
      if (u.node != assign) assign->add_control_input(u.node);
    }
  }
  return g;
}

void enable_data_parallel(nn::Model& model, std::shared_ptr<dist::DataParallel> dp) {
  TrainingState* s = model.training_state();
  TERN_CHECK_ARG(s != nullptr, "model '", model.name(), "' is not compiled: call compile() first");
  s->data_parallel = std::move(dp);
  s->steps.clear();
  s->compile_options.pin = [](const ir::Node& n, bool is_output, int index) -> Tensor {
    return dist::bucket_operand(n, is_output, index);
  };
}

CompiledStep& TrainingState::get(nn::Model& model, StepKind kind, const TensorType& x,
                                 const TensorType* y) {
  std::string key = step_key(kind, x, y);
  auto it = steps.find(key);
  if (it != steps.end()) return it->second;
  // Variables (and the slots the step graph creates) live where the step runs.
  runtime::initialize();
  model.variables().place_on(DeviceRegistry::global().get(compile_options.device));
  std::unique_ptr<ir::Graph> g = build_step_graph(model, *this, kind, x, y);
  CompiledStep c;
  c.exe = runtime::Executable::compile(*g, model.variables(), compile_options);
  log_verbose("train", "compiled ", g->name(), " for x ", x.to_string(), ": ",
              c.exe->steps().size(), " kernels, arena ", c.exe->arena_bytes(), " bytes");
  auto index_of = [&](const char* name) {
    return c.exe->graph().find_input(name) ? c.exe->input_index(name) : -1;
  };
  c.x = index_of("x");
  c.y = index_of("y");
  c.lr = index_of("lr");
  c.step = index_of("step");
  c.rng = index_of("rng_offset");
  const auto& outs = g->outputs();
  size_t next = 0;
  if (kind == StepKind::kPredict) {
    c.pred_output = 0;
  } else {
    c.loss_output = 0;
    next = 1;
    for (const auto& m : metrics) {
      c.metric_begin.push_back(next);
      while (next < outs.size() && outs[next].name.rfind(m->name() + "/", 0) == 0) ++next;
    }
    c.metric_begin.push_back(next);
    for (size_t i = next; i < outs.size(); ++i) {
      if (outs[i].name == kFiniteOutput) c.finite_output = static_cast<int>(i);
    }
  }
  return steps.emplace(key, std::move(c)).first->second;
}

}  // namespace tern::train
