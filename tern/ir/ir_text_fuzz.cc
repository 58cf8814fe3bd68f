// Fuzz target: the IR text parser (a served model's graph.tern comes from a model directory on
// disk). Any input must parse or fail with InvalidArgument; a parsed graph must print and parse
// back to the same text.
#include <cstdlib>
#include <string_view>

#include "tern/ir/parser.h"
#include "tern/ir/printer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tern;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  std::unique_ptr<ir::Graph> g;
  try {
    g = ir::parse_graph(text, "graph.tern");
  } catch (const Error& e) {
    if (e.code() != ErrorCode::kInvalidArgument) std::abort();
    return 0;
  }
  std::string printed = ir::print_graph(*g);
  if (ir::print_graph(*ir::parse_graph(printed, "printed")) != printed) std::abort();
  return 0;
}
