// Profile analysis: from the trace of some training steps, the ops ranked by total time (per node
// and per op type) with their share of step time, and each step split into input wait, compute
// (the compiled step minus the optimizer update) and optimizer (the fused *_update ops).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "tern/io/chrome_trace.h"
#include "tern/runtime/executable.h"

namespace tern::nn {
class Model;
}

namespace tern::train {

struct OpTime {
  std::string name;  // node name (by_node) or op name (by_op)
  std::string op;
  std::string kernel;
  int64_t calls = 0;
  double total_ms = 0;
  double percent_of_step = 0;
};

struct ProfileReport {
  int64_t steps = 0;   // train steps in the trace
  double step_ms = 0;  // input wait + train steps, summed
  double input_wait_ms = 0;
  double compute_ms = 0;       // train-step time outside the optimizer update
  double optimizer_ms = 0;     // *_update ops
  double unattributed_ms = 0;  // inside train steps but in no op (dispatch, feeding)
  std::vector<OpTime> by_node;
  std::vector<OpTime> by_op;
  // A table of the top `top` ops by type and by node, and the step split.
  std::string format(size_t top = 15) const;
};

// Node name -> (op, kernel) for every compiled step of a model (train steps win on clashes).
std::map<std::string, runtime::StepInfo> compiled_nodes(nn::Model& model);
// Trace args naming each op event's op type and kernel.
io::TraceArgs op_trace_args(const std::map<std::string, runtime::StepInfo>& nodes);

ProfileReport analyze_profile(const std::vector<io::TraceEvent>& events,
                              const std::map<std::string, runtime::StepInfo>& nodes);

}  // namespace tern::train
