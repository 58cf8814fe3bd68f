// A TraceSink for the bench binaries: sums the wall time of every executed node by name, and the
// calling thread's CPU time since the previous node ended (all of a node's CPU time when it runs
// on one thread), then prints the nodes ranked by wall time.
#pragma once

#include <time.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "tern/base/trace.h"
#include "tern/runtime/executable.h"

namespace tern::bench {

inline double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

class OpTimeSink : public TraceSink {
 public:
  void record(std::string_view name, std::string_view category, int64_t,
              int64_t duration_ns) override {
    if (category != "op") return;
    std::lock_guard<std::mutex> lock(mu_);
    double now = thread_cpu_seconds();
    ns_[std::string(name)] += duration_ns;
    cpu_[std::string(name)] += now - last_cpu_;
    last_cpu_ = now;
  }
  // Call right before the first traced run.
  void start() { last_cpu_ = thread_cpu_seconds(); }

  // The ranking, per run of `exe` (`runs` runs were traced), top `limit` nodes.
  void print(FILE* out, const runtime::Executable& exe, int64_t runs, size_t limit = 1000) const {
    std::map<std::string, const runtime::StepInfo*> info;
    for (const auto& si : exe.steps()) info[si.node] = &si;
    std::vector<std::pair<int64_t, std::string>> ranked;
    int64_t total = 0;
    double cpu_total = 0;
    for (const auto& [name, ns] : ns_) {
      ranked.push_back({ns, name});
      total += ns;
      cpu_total += cpu_.at(name);
    }
    std::sort(ranked.rbegin(), ranked.rend());
    double r = static_cast<double>(runs);
    std::fprintf(out, "%-48s %-26s %-10s %9s %6s %9s\n", "node", "op", "kernel", "ms/step", "%",
                 "cpu ms");
    for (size_t i = 0; i < ranked.size() && i < limit; ++i) {
      const auto& [ns, name] = ranked[i];
      auto it = info.find(name);
      const runtime::StepInfo* si = it == info.end() ? nullptr : it->second;
      std::fprintf(
          out, "%-48s %-26s %-10s %9.3f %6.1f %9.3f\n", name.c_str(), si ? si->op.c_str() : "?",
          si ? si->kernel.c_str() : "?", static_cast<double>(ns) / 1e6 / r,
          100.0 * static_cast<double>(ns) / static_cast<double>(std::max<int64_t>(1, total)),
          cpu_.at(name) * 1e3 / r);
    }
    std::fprintf(out, "sum of nodes: %.2f ms/step wall, %.2f ms/step cpu of the calling thread\n",
                 static_cast<double>(total) / 1e6 / r, cpu_total * 1e3 / r);
  }

 private:
  mutable std::mutex mu_;
  std::map<std::string, int64_t> ns_;
  std::map<std::string, double> cpu_;
  double last_cpu_ = 0;
};

}  // namespace tern::bench
