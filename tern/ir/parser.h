// Text IR -> Graph: reads what printer.h writes (and hand-written graphs for tests and tools).
// Values must be defined before they are used (the printer's topological order does this).
// Type annotations after ':' are optional: types are inferred from the op, and an annotation
// that disagrees is an error. Attributes take their kind from the op's declaration, so `1` is
// accepted for a float attribute and `[]` for ints or floats; omitted attributes get defaults.
// `//` starts a comment that runs to the end of the line.
//
// Every error is InvalidArgument "<source>:<line>:<column>: <problem>", including errors raised
// by op inference (unknown op, shape mismatch), which are reported at the node's line.
#pragma once

#include <memory>
#include <string_view>

#include "tern/ir/graph.h"

namespace tern::ir {

// `source` names the text in messages (a file name; default "<ir>").
std::unique_ptr<Graph> parse_graph(std::string_view text, std::string_view source = "<ir>");

}  // namespace tern::ir
