// GradientProbe: a forward + loss + autodiff graph whose outputs are the weight gradients.
#include "tern/train/gradient_probe.h"

#include "tern/autodiff/autodiff.h"
#include "tern/nn/model.h"
#include "tern/train/training_state.h"

namespace tern::train {

std::vector<std::pair<std::string, Tensor>> GradientProbe::compute(nn::Model& model,
                                                                   const Tensor& x,
                                                                   const Tensor& y) {
  TrainingState* s = model.training_state();
  TERN_CHECK_ARG(s && s->loss, "gradient probe: model '", model.name(), "' is not compiled");
  std::vector<nn::WeightSpec> weights = model.trainable_weights();
  std::string key = x.type().to_string() + ":" + y.type().to_string();
  auto& exe = executables_[key];
  if (!exe) {
    ir::Graph g("gradient_probe");
    ir::Value* xv = g.input("x", x.type());
    ir::Value* yv = g.input("y", y.type());
    std::vector<std::pair<std::string, ir::Value*>>
        updates;  // not applied: the probe changes nothing
    nn::LayerContext ctx{g};
    ctx.training = true;
    ctx.updates = &updates;
    ctx.rng_offset = g.input("rng_offset", {DType::kI64, Shape{}});
    std::vector<ir::Value*> outs = model.forward(ctx, std::vector<ir::Value*>{xv});
    TERN_CHECK_ARG(outs.size() == 1, "gradient probe: model '", model.name(), "' has ", outs.size(),
                   " outputs");
    ir::Value* pred = outs[0];
    if (pred->dtype() != DType::kF32)
      pred = g.add("cast", {pred}, {{"dtype", DType::kF32}}, "output_f32");
    ir::Value* loss = s->loss->call(g, yv, pred);
    std::vector<ir::Value*> params;
    for (const auto& w : weights) params.push_back(g.variable(w.name, w.type));
    std::vector<ir::Value*> grads = autodiff::gradients(g, loss, params);
    for (size_t i = 0; i < weights.size(); ++i) g.add_output(weights[i].name, grads[i]);
    exe = runtime::Executable::compile(g, model.variables(), s->compile_options);
  }
  exe->feed("x", x);
  exe->feed("y", y);
  exe->feed("rng_offset", Tensor::scalar(DType::kI64, 0));
  exe->run();
  std::vector<std::pair<std::string, Tensor>> out;
  for (size_t i = 0; i < weights.size(); ++i)
    out.push_back({weights[i].name, exe->output(i).clone()});
  return out;
}

}  // namespace tern::train
