// OpDef: everything tern knows about an op independent of any kernel: its inputs, typed
// attributes, traits, the dtypes it claims, and shape+dtype inference.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "tern/ops/attrs.h"
#include "tern/tensor/tensor.h"

namespace tern::ops {

enum OpTrait : uint32_t {
  kTraitNone = 0,
  kTraitElementwise = 1u << 0,        // output[i] depends only on inputs[i] (after broadcasting)
  kTraitCommutative = 1u << 1,        // f(a, b) == f(b, a)
  kTraitStateful = 1u << 2,           // not a pure function of its inputs: never folded or CSE'd
  kTraitMutatesInputs = 1u << 3,      // writes into inputs that are variables (optimizer updates)
  kTraitNotDifferentiable = 1u << 4,  // no gradient flows through (argmax, comparisons, ...)
  kTraitSource = 1u << 5,             // input / variable / constant: no kernel runs
  // Scheduling hints for ops that start and finish asynchronous work (collectives): run as soon
  // as the inputs are ready / as late as the first consumer allows (ir::live_topo_order).
  kTraitScheduleEarly = 1u << 6,
  kTraitScheduleLate = 1u << 7,
  // Output 0 is input 0's bytes in another shape (reshape, expand_dims, squeeze): memory planning
  // gives it the input's block even while the input lives on, and the kernel copies nothing.
  kTraitView = 1u << 8,
};

struct AttrSpec {
  std::string name;
  AttrKind kind;
  std::optional<AttrValue> default_value;  // nullopt: required
};

class OpDef;

// What inference sees: the op, the node's name (for messages), input types and attributes.
struct InferContext {
  const OpDef& op;
  std::string_view node_name;
  std::span<const TensorType> inputs;
  const Attrs& attrs;

  const TensorType& input(size_t i) const { return inputs[i]; }
  // InvalidArgument "op 'matmul' (node 'dense_1/matmul'): <message>; inputs: f32[2, 3], f32[4, 5]".
  template <typename... Args>
  [[noreturn]] void fail(const Args&... args) const {
    fail_message(str_cat(args...));
  }
  [[noreturn]] void fail_message(const std::string& message) const;
};

using InferFn = std::function<std::vector<TensorType>(const InferContext&)>;

class OpDef {
 public:
  std::string name;
  std::string family;  // "elementwise", "nn", ... (for `tern ops` and docs)
  std::string doc;
  std::vector<std::string> inputs;  // input names; with variadic, the last one repeats
  bool variadic = false;
  int min_inputs = -1;  // with variadic: the fewest inputs accepted (default inputs.size())
  std::vector<AttrSpec> attrs;
  std::vector<DType> dtypes;  // dtypes of the key input the op claims to support
  int key_input = 0;          // input whose dtype keys kernel lookup; -1 = output 0
  uint32_t traits = kTraitNone;
  // Pairs (output, input): the output may be written into the input's buffer when the input
  // dies at this node (memory planning).
  std::vector<std::pair<int, int>> inplace;
  // Where the pairs depend on the attributes (an optional input's position): used instead of
  // `inplace` when set.
  std::function<std::vector<std::pair<int, int>>(const Attrs&)> inplace_for;
  InferFn infer;

  // The (output, input) pairs of a node with these attributes.
  std::vector<std::pair<int, int>> inplace_pairs(const Attrs& attrs) const {
    return inplace_for ? inplace_for(attrs) : inplace;
  }

  bool has_trait(OpTrait t) const { return (traits & t) != 0; }
  bool claims(DType dtype) const;
  const AttrSpec* find_attr(std::string_view name) const;

  // Fills defaults into `attrs`, checks kinds, unknown and missing attributes, the input count and
  // the key dtype, then runs inference. Errors name the op, the node and the shapes.
  std::vector<TensorType> check_and_infer(std::string_view node_name,
                                          std::span<const TensorType> input_types,
                                          Attrs& attrs) const;
  // The dtype that keys kernel lookup for these input/output types.
  DType key_dtype(std::span<const TensorType> inputs, std::span<const TensorType> outputs) const;
};

}  // namespace tern::ops
