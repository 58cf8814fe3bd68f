// Op micro-benchmark: GFLOP/s of tern's kernels on matmul 2048^3 (f32, bf16) and conv2d at ResNet
// shapes (batch 32; forward, and backward data/filter for one shape). Each workload is one node
// compiled into a runtime::Executable (kernel chosen by normal selection, primitive built once),
// fed random inputs, warmed up, then timed until --min-time seconds; the median run is reported.
// bench/ops_bench_torch.py runs the same workloads in PyTorch; bench/run_ops_bench.sh runs both.
// `stream_triad` is the machine's memory bandwidth for the suite's floors: a STREAM-like triad
// a[i] = b[i] + s * c[i] over three arrays of 128 MiB (f32, far larger than any cache), one
// std::thread per core on its own contiguous share, counted as STREAM counts it (12 bytes per
// element: two reads, one write); its second column is GB/s.
//
// Usage: ops_bench [--filter SUBSTR | --name NAME] [--min-time SECONDS] [--list]
// Output: one line per workload, tab-separated: name, GFLOP/s (GB/s for stream_triad), kernel.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "bench/bench_clock.h"
#include "tern/base/philox.h"
#include "tern/ir/graph.h"
#include "tern/runtime/executable.h"
#include "tern/runtime/runtime.h"

namespace tern::bench {
namespace {

using Ints = std::vector<int64_t>;

struct Workload {
  std::string name;
  double flops = 0;
  std::string op;
  std::vector<TensorType> inputs;
  ops::Attrs attrs;
};

// ResNet-style 3x3 / 1x1 conv, stride 1, SAME: x [n, hw, hw, c], filter [k, k, c, o].
struct ConvShape {
  int64_t n, hw, c, k, o;
  std::string tag() const {
    return str_cat("b", n, "_", hw, "x", hw, "x", c, "_", k, "x", k, "_", o);
  }
  double flops() const { return 2.0 * n * hw * hw * c * o * k * k; }
};

std::vector<Workload> workloads() {
  std::vector<Workload> w;
  const int64_t m = 2048;
  for (DType d : {DType::kF32, DType::kBF16}) {
    w.push_back({str_cat("matmul_2048_", dtype_name(d)),
                 2.0 * m * m * m,
                 "matmul",
                 {{d, {m, m}}, {d, {m, m}}},
                 {}});
  }
  const ops::Attrs same = {{"padding", std::string("SAME")}};
  const std::vector<ConvShape> resnet = {{32, 56, 64, 3, 64},
                                         {32, 28, 128, 3, 128},
                                         {32, 14, 256, 3, 256},
                                         {32, 7, 512, 3, 512},
                                         {32, 56, 64, 1, 256}};
  for (const ConvShape& s : resnet) {
    w.push_back({"conv2d_f32_" + s.tag(),
                 s.flops(),
                 "conv2d",
                 {{DType::kF32, {s.n, s.hw, s.hw, s.c}}, {DType::kF32, {s.k, s.k, s.c, s.o}}},
                 same});
  }
  const ConvShape s = resnet[1];
  ops::Attrs in_attrs = same, filter_attrs = same;
  in_attrs.set("input_shape", Ints{s.n, s.hw, s.hw, s.c});
  filter_attrs.set("filter_shape", Ints{s.k, s.k, s.c, s.o});
  w.push_back({"conv2d_bwd_input_f32_" + s.tag(),
               s.flops(),
               "conv2d_backprop_input",
               {{DType::kF32, {s.n, s.hw, s.hw, s.o}}, {DType::kF32, {s.k, s.k, s.c, s.o}}},
               in_attrs});
  w.push_back({"conv2d_bwd_filter_f32_" + s.tag(),
               s.flops(),
               "conv2d_backprop_filter",
               {{DType::kF32, {s.n, s.hw, s.hw, s.c}}, {DType::kF32, {s.n, s.hw, s.hw, s.o}}},
               filter_attrs});
  w.push_back({"conv2d_bf16_" + s.tag(),
               s.flops(),
               "conv2d",
               {{DType::kBF16, {s.n, s.hw, s.hw, s.c}}, {DType::kBF16, {s.k, s.k, s.c, s.o}}},
               same});
  return w;
}

Tensor random_input(const TensorType& t, uint64_t seed) {
  Tensor f(DType::kF32, t.shape);
  PhiloxStream rng(seed);
  float* p = f.data<float>();
  for (int64_t i = 0; i < f.num_elements(); ++i) {
    p[i] = static_cast<float>(rng.next_double() * 2.0 - 1.0);
  }
  return t.dtype == DType::kF32 ? f : f.cast(t.dtype);
}

// Compiles the workload, runs it until `min_time` seconds have passed (at least 3 timed runs)
// and returns {median seconds per run, kernel name}.
std::pair<double, std::string> time_workload(const Workload& w, double min_time) {
  ir::Graph g("bench");
  std::vector<ir::Value*> ins;
  for (size_t i = 0; i < w.inputs.size(); ++i) {
    ins.push_back(g.input(str_cat("in", i), w.inputs[i]));
  }
  g.add_output("y", g.add(w.op, ins, w.attrs, w.op));
  runtime::VariableStore vars;
  auto exe = runtime::Executable::compile(g, vars);
  for (size_t i = 0; i < w.inputs.size(); ++i) {
    exe->feed(str_cat("in", i), random_input(w.inputs[i], 17 + i));
  }
  exe->run();  // warm-up: first-touch of buffers, scratchpad growth
  exe->run();
  std::vector<double> times;
  double start = wall_seconds();
  while (times.size() < 3 || wall_seconds() - start < min_time) {
    double t0 = wall_seconds();
    exe->run();
    times.push_back(wall_seconds() - t0);
  }
  std::sort(times.begin(), times.end());
  std::string kernel;
  for (const auto& s : exe->steps()) {
    if (s.op == w.op) kernel = s.kernel;
  }
  return {times[times.size() / 2], kernel};
}

// The triad over `threads` threads: {median seconds per run, bytes per run}.
std::pair<double, double> time_triad(double min_time, int threads) {
  const int64_t n = int64_t{32} << 20;  // 128 MiB per array
  std::vector<float> a(static_cast<size_t>(n)), b(static_cast<size_t>(n)),
      c(static_cast<size_t>(n));
  auto parallel = [&](auto&& body) {
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) {
      int64_t lo = n * t / threads, hi = n * (t + 1) / threads;
      pool.emplace_back([=, &body] { body(lo, hi); });
    }
    for (std::thread& th : pool) th.join();
  };
  parallel([&](int64_t lo, int64_t hi) {  // first touch by the thread that uses the share
    for (int64_t i = lo; i < hi; ++i) {
      a[static_cast<size_t>(i)] = 0.0f;
      b[static_cast<size_t>(i)] = 1.0f;
      c[static_cast<size_t>(i)] = 2.0f;
    }
  });
  const float scale = 3.0f;
  auto triad = [&](int64_t lo, int64_t hi) {
    float* __restrict pa = a.data();
    const float* __restrict pb = b.data();
    const float* __restrict pc = c.data();
    for (int64_t i = lo; i < hi; ++i) pa[i] = pb[i] + scale * pc[i];
  };
  parallel(triad);  // warm-up
  std::vector<double> times;
  double start = wall_seconds();
  while (times.size() < 5 || wall_seconds() - start < min_time) {
    double t0 = wall_seconds();
    parallel(triad);
    times.push_back(wall_seconds() - t0);
  }
  if (a[static_cast<size_t>(n / 2)] != 7.0f)
    throw_error(ErrorCode::kInternal, "triad: wrong result");
  return {median(times), 12.0 * static_cast<double>(n)};
}

int main_impl(int argc, char** argv) {
  std::string filter, name;
  double min_time = 1.0;
  bool list = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--filter" && i + 1 < argc) {
      filter = argv[++i];
    } else if (a == "--name" && i + 1 < argc) {
      name = argv[++i];
    } else if (a == "--min-time" && i + 1 < argc) {
      min_time = std::atof(argv[++i]);
    } else if (a == "--list") {
      list = true;
    } else {
      std::fprintf(
          stderr,
          "usage: ops_bench [--filter SUBSTR | --name NAME] [--min-time SECONDS] [--list]\n");
      return 2;
    }
  }
  runtime::initialize();
  runtime::set_intra_op_threads(0);  // one OpenMP thread per available core
  const bool triad_selected =
      (filter.empty() && name.empty()) ||
      (!filter.empty() && std::string("stream_triad").find(filter) != std::string::npos) ||
      name == "stream_triad";
  if (list && triad_selected) std::printf("stream_triad\n");
  if (!list && triad_selected) {
    const int threads = runtime::intra_op_threads();
    auto [secs, bytes] = time_triad(min_time, threads);
    std::printf("stream_triad\t%.2f\tstd::thread x %d\n", bytes / secs / 1e9, threads);
    std::fflush(stdout);
  }
  for (const Workload& w : workloads()) {
    if (!filter.empty() && w.name.find(filter) == std::string::npos) continue;
    if (!name.empty() && w.name != name) continue;
    if (list) {
      std::printf("%s\n", w.name.c_str());
      continue;
    }
    auto [secs, kernel] = time_workload(w, min_time);
    std::printf("%s\t%.2f\t%s\n", w.name.c_str(), w.flops / secs / 1e9, kernel.c_str());
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace
}  // namespace tern::bench

int main(int argc, char** argv) {
  try {
    return tern::bench::main_impl(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ops_bench: %s\n", e.what());
    return 1;
  }
}
