// Gradient rules for dropout (the mask it returned applied to dy), dropout_apply (linear in x
// with the same mask) and embedding (dy rows summed into a zero [V, D...] tensor at their ids via
// scatter_add).
#include "tern/autodiff/autodiff.h"

namespace tern::autodiff {
namespace {

// dropout and dropout_apply: dy scaled by the mask (dropout's second output, or the mask input).
std::vector<ir::Value*> apply_mask(GradContext& c, ir::Value* mask) {
  return {c.op("dropout_apply", {c.dy(), mask}, {{"rate", c.attrs().get_float("rate")}}), nullptr};
}

}  // namespace

void register_nn_misc_grads(GradRegistry& r) {
  // With a residual (fuse_dropout_residual), dy reaches it unchanged.
  r.add("dropout", [](GradContext& c) {
    std::vector<ir::Value*> grads = apply_mask(c, c.y(1));
    if (c.node().num_inputs() > 2) grads.push_back(c.dy());
    return grads;
  });
  r.add("dropout_apply", [](GradContext& c) { return apply_mask(c, c.x(1)); });

  r.add("embedding", [](GradContext& c) -> std::vector<ir::Value*> {
    ir::Value *params = c.x(0), *ids = c.x(1), *dy = c.dy();
    const std::vector<int64_t>& pdims = params->shape().dims();
    int64_t n = ids->shape().num_elements();
    if (ids->shape().rank() != 1) {
      std::vector<int64_t> rows = {n};
      rows.insert(rows.end(), pdims.begin() + 1, pdims.end());
      ids = c.op("reshape", {ids}, {{"shape", std::vector<int64_t>{n}}});
      dy = c.op("reshape", {dy}, {{"shape", rows}});
    }
    return {c.op("scatter_add", {ids, dy}, {{"shape", pdims}}), nullptr};
  });
}

}  // namespace tern::autodiff
