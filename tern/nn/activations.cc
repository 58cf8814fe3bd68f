// Activations as graph ops.
#include "tern/nn/activations.h"

#include <vector>

#include "tern/ops/registry.h"

namespace tern::nn {
namespace {

const std::vector<std::string>& activation_names() {
  static const std::vector<std::string> names = {"linear",     "relu",  "gelu",    "gelu_tanh",
                                                 "sigmoid",    "tanh",  "softmax", "log_softmax",
                                                 "leaky_relu", "swish", "silu",    "softplus"};
  return names;
}

}  // namespace

void check_activation_name(const std::string& a) {
  if (a.empty()) return;
  for (const auto& n : activation_names()) {
    if (n == a) return;
  }
  std::string best = ops::closest_name(a, activation_names());
  throw_error(ErrorCode::kInvalidArgument, "unknown activation '", a, "'",
              best.empty() ? "" : str_cat(" (did you mean '", best, "'?)"));
}

ir::Value* apply_activation(ir::Graph& g, ir::Value* x, const std::string& a,
                            const std::string& scope) {
  check_activation_name(a);
  std::string n = scope.empty() ? a : scope + "/" + a;
  if (a.empty() || a == "linear") return x;
  if (a == "relu" || a == "sigmoid" || a == "tanh" || a == "softplus") return g.add(a, {x}, {}, n);
  if (a == "gelu") return g.add("gelu", {x}, {{"approximate", false}}, n);
  if (a == "gelu_tanh") return g.add("gelu", {x}, {{"approximate", true}}, n);
  if (a == "softmax" || a == "log_softmax") return g.add(a, {x}, {{"axis", int64_t{-1}}}, n);
  if (a == "leaky_relu") {
    ir::Value* scaled = g.add("mul", {x, g.scalar(x->dtype(), 0.2)}, {}, n + "/scale");
    return g.add("maximum", {x, scaled}, {}, n);
  }
  // swish / silu: x * sigmoid(x)
  return g.add("mul", {x, g.add("sigmoid", {x}, {}, n + "/sigmoid")}, {}, n);
}

}  // namespace tern::nn
