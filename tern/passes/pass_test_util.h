// Helpers for pass tests: text IR in, run a pass (verified), structural queries out.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string_view>

#include "tern/ir/parser.h"
#include "tern/ir/printer.h"
#include "tern/ir/verifier.h"
#include "tern/passes/pass.h"

namespace tern::passes::testing {

inline std::unique_ptr<ir::Graph> parse(std::string_view text) {
  return ir::parse_graph(text);
}

// Runs `pass` once and verifies the result.
inline bool run_pass(Pass& pass, ir::Graph& g) {
  bool changed = pass.run(g);
  ir::verify(g, pass.name());
  return changed;
}

inline size_t count_ops(const ir::Graph& g, std::string_view op) {
  return g.nodes_of(op).size();
}

// An f32 tensor of `shape` holding scale * sin(0.37 i + 1): smooth, signed, reproducible values.
inline Tensor sine_tensor(const Shape& shape, double scale) {
  Tensor t(DType::kF32, shape);
  for (int64_t i = 0; i < t.num_elements(); ++i)
    t.data<float>()[i] = static_cast<float>(scale * std::sin(0.37 * static_cast<double>(i) + 1));
  return t;
}

// The node producing graph output `name`.
inline const ir::Node& output_node(const ir::Graph& g, std::string_view name) {
  for (const auto& o : g.outputs()) {
    if (o.name == name) return *o.value->node();
  }
  throw_error(ErrorCode::kNotFound, "no output ", name);
}

// The value of graph output `name`.
inline const ir::Value* output_value(const ir::Graph& g, std::string_view name) {
  for (const auto& o : g.outputs()) {
    if (o.name == name) return o.value;
  }
  throw_error(ErrorCode::kNotFound, "no output ", name);
}

}  // namespace tern::passes::testing
