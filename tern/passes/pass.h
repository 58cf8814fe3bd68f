// Pass and PassPipeline. A pass rewrites a graph in place and reports whether it changed anything.
// The pipeline runs the verifier after every pass and can print the graph between passes
// (TERN_VERBOSE=passes).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "tern/ir/graph.h"

namespace tern::passes {

class Pass {
 public:
  virtual ~Pass() = default;
  virtual std::string name() const = 0;
  // Returns true if the graph changed.
  virtual bool run(ir::Graph& g) = 0;
};

struct PassStats {
  std::string pass;
  bool changed = false;
  size_t nodes_before = 0;
  size_t nodes_after = 0;
  double milliseconds = 0;
};

class PassPipeline {
 public:
  PassPipeline& add(std::unique_ptr<Pass> pass);
  // Runs each pass once in order, verifying after each; returns per-pass statistics.
  std::vector<PassStats> run(ir::Graph& g) const;
  std::vector<std::string> names() const;

 private:
  std::vector<std::unique_ptr<Pass>> passes_;
};

struct PipelineOptions {
  bool deterministic = false;            // drop passes that may change bits
  std::vector<std::string> disabled;     // pass names to skip
};

// The standard optimization pipeline used by Executable::compile.
PassPipeline default_pipeline(const PipelineOptions& options = {});

}  // namespace tern::passes
