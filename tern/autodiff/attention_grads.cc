// Gradient rule for attention: one attention_grad node reading what the forward op saved (the
// softmax and dropout's mask), with the forward's scale, dropout, causal flag and mask. A forward
// built without save_probs (an inference graph someone differentiates) is run again with it: the
// same probabilities and mask, since the mask is a function of (seed, offset).
#include "tern/autodiff/autodiff.h"

namespace tern::autodiff {

void register_attention_grads(GradRegistry& r) {
  r.add("attention", [](GradContext& c) -> std::vector<ir::Value*> {
    const ops::Attrs& a = c.attrs();
    const bool masked = c.node().num_inputs() > 4;
    ir::Value *probs = c.y(1), *dropout_mask = c.y(2);
    if (!a.get_bool("save_probs")) {
      std::vector<ir::Value*> fwd = c.node().inputs();
      ops::Attrs saving = a;
      saving.set("save_probs", true);
      ir::Node* again = c.op_node("attention", fwd, saving);
      probs = again->output(1);
      dropout_mask = again->output(2);
    }
    std::vector<ir::Value*> in = {c.dy(), c.x(0), c.x(1), c.x(2), probs, dropout_mask};
    if (masked) in.push_back(c.x(4));
    ir::Node* g = c.op_node("attention_grad", in,
                            {{"scale", a.get_float("scale")},
                             {"rate", a.get_float("rate")},
                             {"causal", a.get_bool("causal")}});
    std::vector<ir::Value*> grads = {g->output(0), g->output(1), g->output(2), nullptr};
    if (masked) grads.push_back(nullptr);
    return grads;
  });
}

}  // namespace tern::autodiff
