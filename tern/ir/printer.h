// Text form of a graph, read back by parser.h. Nodes are printed in topological order, one per
// line, with every attribute (sorted by name) and the output types:
//
//   graph @main {
//     %x = input() {dtype=f32, name="x", shape=[2, 3]} : f32[2, 3]
//     %w = variable() {dtype=f32, name="w", shape=[3, 4]} : f32[3, 4]
//     %mm = matmul(%x, %w) {transpose_a=false, transpose_b=false} : f32[2, 4]
//     %s = split(%mm) {axis=1, sizes=[1, 3]} : (f32[2, 1], f32[2, 3])
//     %u = assign(%w, %b) after(%mm) : ()
//     return {"y": %s#1}
//   }
//
// Values: %node for output 0, %node#k for output k; names outside [A-Za-z0-9_./-] are quoted
// (%"a b"). `after(...)` lists control inputs. Attribute literals: ints 3, floats 0.5 / 1e-05 /
// inf / nan (always with a '.', exponent or name, so they read as floats), bools, "strings" with
// C escapes, lists [1, 2], dtypes f32, tensors tensor<f32[2]>[0.5, 1]. Floating values print as the
// shortest decimal that reads back to the same bits (at most 9 significant digits for f32, bf16
// and f16, 17 for f64), so printing is exact.
#pragma once

#include <string>

#include "tern/ir/graph.h"

namespace tern::ir {

std::string print_graph(const Graph& g);
// One node as its line in print_graph (no indentation, no newline).
std::string print_node(const Node& n);
// One attribute value as the printer writes it.
std::string print_attr_value(const ops::AttrValue& value);
// "%name" / "%name#k" / "%\"odd name\"".
std::string print_value_ref(const Value& v);

}  // namespace tern::ir
