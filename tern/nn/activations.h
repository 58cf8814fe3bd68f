// Activation functions by Keras name, applied as graph ops: linear (or ""), relu, gelu
// (erf form; "gelu_tanh" for the tanh approximation), sigmoid, tanh, softmax, log_softmax,
// leaky_relu (alpha 0.2, Keras' default), swish/silu, softplus, elu is not offered.
#pragma once

#include <string>

#include "tern/ir/graph.h"

namespace tern::nn {

// InvalidArgument naming the activation and the closest valid name if unknown.
ir::Value* apply_activation(ir::Graph& g, ir::Value* x, const std::string& activation,
                            const std::string& scope = "");
// Throws the same error early (at layer construction).
void check_activation_name(const std::string& activation);

}  // namespace tern::nn
