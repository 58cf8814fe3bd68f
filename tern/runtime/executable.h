// Executable: a graph compiled once for a device (passes, placement and kernel selection, memory
// plan in the device's memory) and then run many times: bind inputs, run the steps, read outputs.
// A run allocates nothing and looks nothing up. Variables are bound to the VariableStore's
// tensors, so optimizer updates land in the store. Fed values are copied into the device's input
// buffers; outputs live on the device (output_host() brings one to the host, without a copy when
// the device's memory is host-accessible).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tern/ir/graph.h"
#include "tern/kernels/kernel.h"
#include "tern/passes/pass.h"
#include "tern/runtime/eager.h"
#include "tern/runtime/variable_store.h"

namespace tern::runtime {

struct CompileOptions {
  DeviceType device = DeviceType::kCPU;  // a registered backend (DeviceRegistry)
  bool optimize = true;                  // run the pass pipeline
  bool deterministic = false;            // only deterministic kernels; bit-changing passes off
  bool check_numerics = false;           // after each op, fail naming the first NaN/Inf producer
  std::vector<std::string> disabled_passes;
  // Mixed-precision compute dtype (passes/amp.h): kF32 = off; kBF16 for "mixed_bfloat16", kF16
  // for "mixed_float16". A policy, not an optimization: applied even with optimize = false.
  DType mixed_precision = DType::kF32;
  std::string force_kernel;  // e.g. "ref": use only that candidate (tests)
  // The variables the graph reads do not change while the executable lives (nothing assigns
  // them: a served model). With optimize, the graph is folded as fold_frozen_variables() does;
  // kernels may then prepare what they derive from them once (oneDNN convolutions reorder their
  // filter at the first run only). Off for anything that trains.
  bool frozen_variables = false;
  // Operands that must live in memory the caller owns (a gradient bucket of the all-reduce):
  // pin(node, is_output, index) returns that tensor, or an undefined one. A pinned output is bound
  // to it; a pinned input is bound to it when its producer is a step and every reader pins it to
  // the same memory (the producer then writes straight into it), else the reading kernel copies.
  std::function<Tensor(const ir::Node& node, bool is_output, int index)> pin;
};

struct StepInfo {
  std::string node;
  std::string op;      // "copy" for a copy step placement inserted
  std::string kernel;  // the candidate's name; "h2d", "d2h" or "d2d" for a copy
  std::string device;  // where it runs, "cpu:0"
};

// Turns the variables of `graph` that no node writes into constants holding `vars`' tensors (the
// same memory, not copies) and folds what then depends on constants alone, once: batch norms into
// the convolutions and matmuls before them (passes/fold_batch_norm.h), casts and arithmetic of
// weights (const_fold, through the kernels `options` selects). Executable::compile does this with
// frozen_variables; a caller that compiles one graph many times (a served model: an executable
// per batch size and concurrent request) calls it on the graph first, so that its executables
// share the folded weights instead of each holding its own. A variable whose stored type differs
// from the graph's, with control edges, or in memory the host cannot read stays a variable
// (binding reports a mismatch);
// broadcast_to nodes are not folded (the graph may yet be rebatched at another batch size).
void fold_frozen_variables(ir::Graph& graph, VariableStore& vars,
                           const CompileOptions& options = {});

class Executable {
 public:
  // Compiles a copy of `graph`; `vars` must outlive the executable and hold every variable the
  // graph reads, with matching types.
  static std::unique_ptr<Executable> compile(const ir::Graph& graph, VariableStore& vars,
                                             const CompileOptions& options = {});
  ~Executable();

  // Copies `value` into the input's buffer; InvalidArgument on unknown name or type mismatch.
  void feed(std::string_view input_name, const Tensor& value);
  // Index of a graph input, for feed_at() in hot loops.
  int input_index(std::string_view input_name) const;
  void feed_at(int index, const Tensor& value);
  // Runs every step once.
  void run();
  // Output i of the last run, on the device; a view valid until the next run (clone() to keep it).
  const Tensor& output(size_t i) const { return outputs_[i]; }
  // Output i on the host once the run's work is done: the same view when the device's memory is
  // host-accessible, else a copy.
  Tensor output_host(size_t i) const;
  // Waits until the last run's work on the device is done.
  void synchronize() const;
  const Tensor& output(std::string_view name) const;
  size_t num_outputs() const { return outputs_.size(); }
  // feed + run + outputs copied to the host.
  std::vector<Tensor> run(const Feeds& feeds);

  const ir::Graph& graph() const { return *graph_; }
  const std::vector<StepInfo>& steps() const { return step_info_; }
  const std::vector<passes::PassStats>& pass_stats() const { return pass_stats_; }
  size_t arena_bytes() const { return arena_bytes_; }
  DeviceBackend& device() const { return *device_; }
  // Copy steps placement inserted (values read on another device than where they live).
  int copy_steps() const { return copy_steps_; }
  int64_t run_count() const { return run_count_; }

 private:
  struct Step;
  class Binder;
  Executable() = default;
  void check_numerics(const Step& step) const;

  std::unique_ptr<ir::Graph> graph_;
  std::vector<Step> steps_;
  std::vector<StepInfo> step_info_;
  std::vector<std::pair<std::string, Tensor>> inputs_;  // name -> bound buffer
  std::vector<Tensor> outputs_;
  std::vector<std::string> output_names_;
  std::vector<passes::PassStats> pass_stats_;
  DeviceBackend* device_ = nullptr;
  std::vector<DeviceBackend*> backends_;  // registered at compile time; prepared by each run()
  std::unique_ptr<Event> done_;           // recorded after each run (null: synchronize the stream)
  int copy_steps_ = 0;
  std::shared_ptr<Storage> arena_;
  size_t arena_bytes_ = 0;
  // The store's 16-bit copies the graph reads (refreshed before each run if their variable
  // changed), and the variables its steps write in place, with the copies written alongside
  // (reported to the store after each run): VariableStore's versions.
  VariableStore* vars_ = nullptr;
  std::vector<std::pair<VariableStore::Entry*, DType>> copies_read_;
  std::vector<std::pair<VariableStore::Entry*, std::vector<DType>>> variables_written_;
  bool check_numerics_ = false;
  int64_t run_count_ = 0;
};

}  // namespace tern::runtime
