// Kernel A/B: times one graph (text IR) compiled once per kernel candidate (force_kernel), runs
// interleaved, and prints each candidate's median time and its CPU time per run. For deciding
// whether a new kernel beats the one it would displace on this machine, in one process:
//   kernel_ab_bench --kernels onednn,cpu_vec --runs 200 'graph @g {
//     %x = input() {dtype=f32, name="x", shape=[128, 26, 26, 32]}
//     %dy = input() {dtype=f32, name="dy", shape=[128, 13, 13, 32]}
//     %dx = max_pool2d_grad(%x, %dy) {ksize=[2, 2], strides=[2, 2], padding="VALID"}
//     return {"dx": %dx}
//   }'
// Inputs are filled with uniform values in [-1, 1); variables are not supported. The candidate
// `default` forces nothing: every node runs the kernel selection would give it (for timing a
// graph of several ops against one fused op).
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "bench/bench_clock.h"
#include "tern/ir/parser.h"
#include "tern/runtime/executable.h"
#include "tern/runtime/openmp_wait.h"
#include "tern/runtime/runtime.h"

namespace tern::bench {
namespace {

int run(int argc, char** argv) {
  std::vector<std::string> kernels;
  std::string text;
  int runs = 100, threads = 0;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--kernels" && i + 1 < argc) {
      std::stringstream ss(argv[++i]);
      for (std::string k; std::getline(ss, k, ',');) kernels.push_back(k);
    } else if (a == "--runs" && i + 1 < argc) {
      runs = std::stoi(argv[++i]);
    } else if (a == "--threads" && i + 1 < argc) {
      threads = std::stoi(argv[++i]);
    } else {
      text = a;
    }
  }
  TERN_CHECK_ARG(!kernels.empty() && !text.empty(),
                 "usage: kernel_ab_bench --kernels a,b [--runs N] [--threads N] 'graph text'");
  runtime::set_intra_op_threads(threads);
  std::unique_ptr<ir::Graph> g = ir::parse_graph(text);
  runtime::VariableStore vars;
  std::mt19937_64 rng(1);
  std::uniform_real_distribution<double> unit(-1.0, 1.0);
  runtime::Feeds feeds;
  for (ir::Node* n : g->nodes()) {
    if (n->op_name() != "input") continue;
    Tensor t(n->output()->dtype(), n->output()->shape());
    for (int64_t e = 0; e < t.num_elements(); ++e) t.set(e, unit(rng));
    feeds.push_back({n->attrs().get_string("name"), t});
  }
  std::vector<std::unique_ptr<runtime::Executable>> exes;
  for (const auto& k : kernels) {
    runtime::CompileOptions o;
    o.optimize = false;
    o.force_kernel = k == "default" ? "" : k;  // default: each node's usual choice
    exes.push_back(runtime::Executable::compile(*g, vars, o));
    for (const auto& [name, t] : feeds) exes.back()->feed(name, t);
    for (int w = 0; w < 3; ++w) exes.back()->run();
  }
  std::vector<std::vector<double>> wall(kernels.size());
  std::vector<double> cpu(kernels.size(), 0.0);
  for (int r = 0; r < runs; ++r) {
    for (size_t k = 0; k < exes.size(); ++k) {
      double c0 = cpu_seconds();
      auto t0 = std::chrono::steady_clock::now();
      exes[k]->run();
      wall[k].push_back(
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
      cpu[k] += cpu_seconds() - c0;
    }
  }
  for (size_t k = 0; k < kernels.size(); ++k) {
    std::sort(wall[k].begin(), wall[k].end());
    std::printf("%-12s median %.4f ms  min %.4f ms  cpu %.4f ms/run  (%d threads)\n",
                kernels[k].c_str(), 1e3 * wall[k][wall[k].size() / 2], 1e3 * wall[k][0],
                1e3 * cpu[k] / runs, runtime::intra_op_threads());
  }
  return 0;
}

}  // namespace
}  // namespace tern::bench

int main(int argc, char** argv) {
  tern::runtime::use_bounded_openmp_spin(argv);
  try {
    return tern::bench::run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kernel_ab_bench: %s\n", e.what());
    return 1;
  }
}
