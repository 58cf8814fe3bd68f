// The `tern ops` command, run as a built binary: one line per registered op whose dtypes, fast
// kernel marks and gradient column agree with the registries, a count line, --help and bad
// arguments.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "tern/autodiff/autodiff.h"
#include "tern/kernels/kernel.h"
#include "tern/ops/registry.h"
#include "tern/runtime/runtime.h"

namespace tern {
namespace {

struct CommandResult {
  int exit_code = -1;
  std::string output;  // stdout and stderr together
};

CommandResult run_tern(const std::string& args) {
  std::string cmd = std::string("'") + TERN_TOOL_PATH + "' " + args + " 2>&1";
  CommandResult r;
  FILE* pipe = popen(cmd.c_str(), "r");
  if (!pipe) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), pipe)) > 0) r.output.append(buf, n);
  int status = pclose(pipe);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

struct OpLine {
  std::string family, dtypes, kernels, grad;
};

// name -> columns; the last line "<count> ops" goes to `count_line`.
std::map<std::string, OpLine> parse(const std::string& output, std::string* count_line) {
  std::map<std::string, OpLine> lines;
  std::istringstream in(output);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream words(line);
    std::vector<std::string> w;
    for (std::string s; words >> s;) w.push_back(s);
    if (w.size() == 2 && w[1] == "ops") {
      *count_line = line;
      continue;
    }
    EXPECT_EQ(w.size(), 7u) << "unparseable line: '" << line << "'";
    if (w.size() != 7) continue;
    EXPECT_EQ(w[3], "kernels:") << line;
    EXPECT_EQ(w[5], "grad:") << line;
    lines[w[0]] = {w[1], w[2], w[4], w[6]};
  }
  return lines;
}

TEST(TernOpsTool, ListsEveryOpConsistentWithTheRegistries) {
  runtime::initialize();
  CommandResult r = run_tern("ops");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::string count_line;
  std::map<std::string, OpLine> lines = parse(r.output, &count_line);
  const auto all = ops::OpRegistry::global().all();
  EXPECT_EQ(count_line, std::to_string(all.size()) + " ops");
  EXPECT_EQ(lines.size(), all.size());
  const auto& kreg = kernels::KernelRegistry::global();
  const auto& greg = autodiff::GradRegistry::global();
  for (const ops::OpDef* op : all) {
    SCOPED_TRACE(op->name);
    auto it = lines.find(op->name);
    ASSERT_NE(it, lines.end()) << "op missing from `tern ops`";
    const OpLine& l = it->second;
    EXPECT_EQ(l.family, op->family);
    std::string dtypes;
    bool any_fast = false;
    for (DType d : op->dtypes) {
      bool fast = kreg.has_fast(op->name, DeviceType::kCPU, d);
      any_fast = any_fast || fast;
      dtypes += (dtypes.empty() ? "" : ",") + std::string(dtype_name(d)) + (fast ? "*" : "");
    }
    EXPECT_EQ(l.dtypes, dtypes);
    if (op->has_trait(ops::kTraitSource)) {
      EXPECT_EQ(l.kernels, "none(source)");
    } else {
      EXPECT_EQ(l.kernels, any_fast ? "fast" : "ref-only");
    }
    if (op->has_trait(ops::kTraitSource) || op->has_trait(ops::kTraitNotDifferentiable)) {
      EXPECT_EQ(l.grad, "n/a");
    } else {
      EXPECT_EQ(l.grad, greg.has(op->name) ? "yes" : "no");
    }
  }
  // The fused optimizer updates have a vectorized kernel for both dtypes and no gradient.
  for (const char* name : {"sgd_update", "adam_update", "adamw_update", "rmsprop_update"}) {
    ASSERT_TRUE(lines.count(name)) << name;
    EXPECT_EQ(lines[name].family, "optimizer");
    EXPECT_EQ(lines[name].dtypes, "f32*,f64*") << name;
    EXPECT_EQ(lines[name].grad, "n/a") << name;
  }
}

TEST(TernOpsTool, HelpAndBadArguments) {
  CommandResult help = run_tern("ops --help");
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_NE(help.output.find("usage: tern ops"), std::string::npos) << help.output;

  CommandResult bad = run_tern("ops --bogus");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.output.find("not expected: --bogus"), std::string::npos) << bad.output;

  CommandResult none = run_tern("");
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_NE(none.output.find("usage: tern COMMAND"), std::string::npos) << none.output;

  CommandResult unknown = run_tern("no-such-command");
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_NE(unknown.output.find("unknown command 'no-such-command'"), std::string::npos)
      << unknown.output;
}

}  // namespace
}  // namespace tern
