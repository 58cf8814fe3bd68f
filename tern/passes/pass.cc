// PassPipeline and the default pipeline.
#include "tern/passes/pass.h"

#include <algorithm>
#include <chrono>

#include "tern/base/logging.h"
#include "tern/ir/verifier.h"

namespace tern::passes {

PassPipeline& PassPipeline::add(std::unique_ptr<Pass> pass) {
  passes_.push_back(std::move(pass));
  return *this;
}

std::vector<PassStats> PassPipeline::run(ir::Graph& g) const {
  std::vector<PassStats> stats;
  ir::verify(g, "input to pass pipeline");
  for (const auto& p : passes_) {
    PassStats s;
    s.pass = p->name();
    s.nodes_before = g.num_nodes();
    auto t0 = std::chrono::steady_clock::now();
    s.changed = p->run(g);
    s.milliseconds = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    s.nodes_after = g.num_nodes();
    ir::verify(g, p->name());
    log_verbose("passes", p->name(), ": ", s.changed ? "changed" : "no change", ", nodes ",
                s.nodes_before, " -> ", s.nodes_after);
    stats.push_back(s);
  }
  return stats;
}

std::vector<std::string> PassPipeline::names() const {
  std::vector<std::string> out;
  for (const auto& p : passes_) out.push_back(p->name());
  return out;
}

PassPipeline default_pipeline(const PipelineOptions& options) {
  (void)options;
  PassPipeline p;
  return p;
}

}  // namespace tern::passes
