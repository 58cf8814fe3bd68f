// Profile analysis over trace events.
#include "tern/train/profile_report.h"

#include <algorithm>
#include <cstdio>

#include "tern/nn/model.h"
#include "tern/train/training_state.h"

namespace tern::train {
namespace {

bool is_optimizer_op(const std::string& op) {
  return op.size() > 7 && op.compare(op.size() - 7, 7, "_update") == 0;
}

void rank(std::vector<OpTime>& v, double step_ms) {
  for (auto& t : v) t.percent_of_step = step_ms > 0 ? 100 * t.total_ms / step_ms : 0;
  std::sort(v.begin(), v.end(), [](const OpTime& a, const OpTime& b) {
    return a.total_ms != b.total_ms ? a.total_ms > b.total_ms : a.name < b.name;
  });
}

}  // namespace

std::map<std::string, runtime::StepInfo> compiled_nodes(nn::Model& model) {
  std::map<std::string, runtime::StepInfo> out;
  TrainingState* s = model.training_state();
  if (!s) return out;
  for (int pass = 0; pass < 2; ++pass) {
    for (const auto& [_, step] : s->steps) {
      if (!step.exe) continue;
      bool train = step.exe->graph().name() == "train_step";
      if ((pass == 0) != train) continue;
      for (const auto& info : step.exe->steps()) out.emplace(info.node, info);
    }
  }
  return out;
}

io::TraceArgs op_trace_args(const std::map<std::string, runtime::StepInfo>& nodes) {
  io::TraceArgs args;
  for (const auto& [name, info] : nodes)
    args[{"op", name}] = {{"op", info.op}, {"kernel", info.kernel}};
  return args;
}

ProfileReport analyze_profile(const std::vector<io::TraceEvent>& events,
                              const std::map<std::string, runtime::StepInfo>& nodes) {
  ProfileReport r;
  // Train-step intervals per thread, to attribute op events to them.
  std::map<int, std::vector<std::pair<int64_t, int64_t>>> steps;
  double op_ms_in_steps = 0;
  for (const auto& e : events) {
    if (e.category != "step") continue;
    double ms = static_cast<double>(e.duration_ns) / 1e6;
    if (e.name == "train_step") {
      ++r.steps;
      r.step_ms += ms;
      steps[e.tid].push_back({e.start_ns, e.start_ns + e.duration_ns});
    } else if (e.name == "input_wait") {
      r.input_wait_ms += ms;
      r.step_ms += ms;
    }
  }
  std::map<std::string, OpTime> by_node, by_op;
  for (const auto& e : events) {
    if (e.category != "op") continue;
    const auto& intervals = steps[e.tid];
    bool inside = std::any_of(intervals.begin(), intervals.end(), [&](const auto& iv) {
      return e.start_ns >= iv.first && e.start_ns + e.duration_ns <= iv.second;
    });
    if (!inside) continue;
    double ms = static_cast<double>(e.duration_ns) / 1e6;
    auto it = nodes.find(e.name);
    std::string op = it != nodes.end() ? it->second.op : "?";
    std::string kernel = it != nodes.end() ? it->second.kernel : "?";
    OpTime& n = by_node[e.name];
    n.name = e.name;
    n.op = op;
    n.kernel = kernel;
    ++n.calls;
    n.total_ms += ms;
    OpTime& o = by_op[op];
    o.name = op;
    o.op = op;
    ++o.calls;
    o.total_ms += ms;
    op_ms_in_steps += ms;
    if (is_optimizer_op(op)) r.optimizer_ms += ms;
  }
  double train_ms = r.step_ms - r.input_wait_ms;
  r.compute_ms = train_ms - r.optimizer_ms;
  r.unattributed_ms = std::max(0.0, train_ms - op_ms_in_steps);
  for (auto& [_, t] : by_node) r.by_node.push_back(t);
  for (auto& [_, t] : by_op) r.by_op.push_back(t);
  rank(r.by_node, r.step_ms);
  rank(r.by_op, r.step_ms);
  return r;
}

std::string ProfileReport::format(size_t top) const {
  std::string out;
  char line[512];
  double per_step = steps > 0 ? step_ms / static_cast<double>(steps) : 0;
  auto pct = [&](double ms) { return step_ms > 0 ? 100 * ms / step_ms : 0; };
  std::snprintf(line, sizeof(line),
                "%lld train steps, %.3f ms per step (input wait + compiled step)\n",
                static_cast<long long>(steps), per_step);
  out += line;
  std::snprintf(line, sizeof(line),
                "step split: input wait %.3f ms (%.1f%%), compute %.3f ms (%.1f%%), optimizer %.3f "
                "ms (%.1f%%); "
                "outside ops %.3f ms (%.1f%%)\n",
                input_wait_ms, pct(input_wait_ms), compute_ms, pct(compute_ms), optimizer_ms,
                pct(optimizer_ms), unattributed_ms, pct(unattributed_ms));
  out += line;
  auto table = [&](const char* title, const std::vector<OpTime>& rows, bool nodes) {
    std::snprintf(line, sizeof(line), "\n%s\n%-40s %-22s %8s %12s %8s\n", title,
                  nodes ? "node" : "op", nodes ? "op / kernel" : "", "calls", "total ms", "% step");
    out += line;
    for (size_t i = 0; i < rows.size() && i < top; ++i) {
      const OpTime& t = rows[i];
      std::string detail = nodes ? t.op + " / " + t.kernel : "";
      std::snprintf(line, sizeof(line), "%-40s %-22s %8lld %12.3f %7.1f%%\n", t.name.c_str(),
                    detail.c_str(), static_cast<long long>(t.calls), t.total_ms, t.percent_of_step);
      out += line;
    }
  };
  table("ops by type, ranked by total time:", by_op, false);
  table("nodes, ranked by total time:", by_node, true);
  return out;
}

}  // namespace tern::train
