// `tern ops`: one line per registered op with its dtypes, whether a fast kernel exists (per dtype)
// and whether it has a gradient rule.
#include <CLI/CLI.hpp>

#include <iomanip>
#include <iostream>

#include "tern/autodiff/autodiff.h"
#include "tern/kernels/kernel.h"
#include "tern/ops/registry.h"
#include "tern/runtime/runtime.h"
#include "tools/tern/cli_parse.h"
#include "tools/tern/commands.h"

namespace tern::tools {

int cmd_ops(int argc, char** argv) {
  CLI::App app{
      "List every registered op, one per line: name, family, dtypes (a '*' marks a dtype with a "
      "fast CPU kernel), kernels: fast|ref-only, grad: yes|no|n/a.",
      "tern ops"};
  init_app(app);
  if (int rc = parse(app, argc, argv); rc >= 0) return rc;
  runtime::initialize();
  const auto& kreg = kernels::KernelRegistry::global();
  const auto& greg = autodiff::GradRegistry::global();
  size_t count = 0;
  for (const ops::OpDef* op : ops::OpRegistry::global().all()) {
    std::string dtypes;
    bool any_fast = false;
    for (DType d : op->dtypes) {
      bool fast = kreg.has_fast(op->name, DeviceType::kCPU, d);
      any_fast = any_fast || fast;
      dtypes += (dtypes.empty() ? "" : ",") + std::string(dtype_name(d)) + (fast ? "*" : "");
    }
    std::string grad =
        op->has_trait(ops::kTraitSource) || op->has_trait(ops::kTraitNotDifferentiable)
            ? "n/a"
            : (greg.has(op->name) ? "yes" : "no");
    std::string kernels =
        op->has_trait(ops::kTraitSource) ? "none(source)" : (any_fast ? "fast" : "ref-only");
    std::cout << std::left << std::setw(34) << op->name << std::setw(12) << op->family
              << std::setw(46) << dtypes << " kernels: " << std::setw(13) << kernels
              << "grad: " << grad << "\n";
    ++count;
  }
  std::cout << count << " ops\n";
  return 0;
}

}  // namespace tern::tools
