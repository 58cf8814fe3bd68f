// All-reduce bench: tern::dist's all_reduce_sum, kFast (MPI_Allreduce in place) against
// kDeterministic (rank-order reduce-scatter + all-gather), on the same f32 buffers. Run it under
// the launcher, one rank per core for numbers worth quoting:
//   mpirun -np 2 --bind-to core build/bench/allreduce_bench --sizes-mib 1,25,100 --repeats 20
//       --json out.json
// Each repeat times the two modes back to back, each started after a barrier; a repeat's time is
// the slowest rank's. Prints, per size and mode, the median seconds, the algorithm bandwidth
// (bytes / s) and the bus bandwidth (2 (N-1) / N x bytes / s), and deterministic / fast in
// bandwidth. Scratch is reserved up front, as a training loop would.
#include <algorithm>
#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include "bench/bench_clock.h"
#include "tern/base/error.h"
#include "tern/dist/communicator.h"

namespace tern::bench {
namespace {

using dist::Communicator;
using dist::ReduceMode;

struct Options {
  std::vector<double> sizes_mib = {1, 25, 100};
  int repeats = 20;
  int warmup = 3;
  std::string json_path;
};

Options parse_options(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    TERN_CHECK_ARG(i + 1 < argc, "allreduce_bench: ", a, " needs a value");
    const std::string v = argv[++i];
    if (a == "--sizes-mib") {
      o.sizes_mib.clear();
      std::stringstream ss(v);
      for (std::string s; std::getline(ss, s, ',');) o.sizes_mib.push_back(std::stod(s));
    } else if (a == "--repeats") {
      o.repeats = std::stoi(v);
    } else if (a == "--warmup") {
      o.warmup = std::stoi(v);
    } else if (a == "--json") {
      o.json_path = v;
    } else {
      throw_error(ErrorCode::kInvalidArgument, "allreduce_bench: unknown flag ", a,
                  " (--sizes-mib a,b,c --repeats N --warmup N --json FILE)");
    }
  }
  TERN_CHECK_ARG(o.repeats > 0 && !o.sizes_mib.empty(), "allreduce_bench: nothing to time");
  return o;
}

// Seconds of one all_reduce_sum on this rank, started after a barrier.
double time_once(Communicator& comm, std::vector<float>& buf, ReduceMode mode) {
  comm.barrier();
  const double t0 = wall_seconds();
  comm.all_reduce_sum(buf.data(), static_cast<int64_t>(buf.size()), DType::kF32, mode);
  return wall_seconds() - t0;
}

// The slowest rank's time for each repeat.
std::vector<double> slowest_rank(Communicator& comm, const std::vector<double>& mine) {
  std::ostringstream os;
  os.precision(17);
  for (double t : mine) os << t << ' ';
  std::vector<double> slowest(mine.size(), 0.0);
  for (const std::string& text : comm.all_gather(os.str())) {
    std::istringstream is(text);
    for (double& s : slowest) {
      double t = 0;
      is >> t;
      s = std::max(s, t);
    }
  }
  return slowest;
}

struct Row {
  double size_mib;
  size_t bytes;
  ReduceMode mode;
  double median_s;
  double algbw;
  double busbw;
};

int run(int argc, char** argv) {
  const Options o = parse_options(argc, argv);
  std::shared_ptr<Communicator> comm = dist::world();
  TERN_CHECK_ARG(comm != nullptr, "allreduce_bench: run it under mpirun");
  const int n = comm->size();
  const double max_mib = *std::max_element(o.sizes_mib.begin(), o.sizes_mib.end());
  comm->reserve(static_cast<size_t>(max_mib * (1 << 20)));
  std::vector<Row> rows;
  for (double mib : o.sizes_mib) {
    const size_t count = static_cast<size_t>(mib * (1 << 20)) / sizeof(float);
    // Small values: every call multiplies them by N, and they must stay finite and normal.
    std::vector<float> buf(count);
    for (size_t i = 0; i < count; ++i) buf[i] = 1e-18f * static_cast<float>(1 + i % 7);
    const ReduceMode modes[] = {ReduceMode::kFast, ReduceMode::kDeterministic};
    for (int w = 0; w < o.warmup; ++w) {
      for (ReduceMode m : modes) time_once(*comm, buf, m);
    }
    std::vector<double> times[2];
    for (int r = 0; r < o.repeats; ++r) {
      for (int k = 0; k < 2; ++k) times[k].push_back(time_once(*comm, buf, modes[k]));
    }
    for (int k = 0; k < 2; ++k) {
      const double t = median(slowest_rank(*comm, times[k]));
      const double bytes = static_cast<double>(count * sizeof(float));
      rows.push_back(
          {mib, count * sizeof(float), modes[k], t, bytes / t, 2.0 * (n - 1) / n * bytes / t});
    }
  }
  if (comm->rank() != 0) return 0;

  std::printf("all_reduce_sum f32, %d ranks, %d repeats (median of the slowest rank)\n", n,
              o.repeats);
  std::printf("%9s  %-13s  %11s  %12s  %12s  %9s\n", "size_MiB", "mode", "median_ms", "algbw_GB/s",
              "busbw_GB/s", "det/fast");
  for (size_t i = 0; i < rows.size(); ++i) {
    const Row& r = rows[i];
    const bool det = r.mode == ReduceMode::kDeterministic;
    std::printf("%9g  %-13s  %11.3f  %12.3f  %12.3f", r.size_mib, dist::reduce_mode_name(r.mode),
                1e3 * r.median_s, r.algbw / 1e9, r.busbw / 1e9);
    if (det) std::printf("  %9.2f", r.algbw / rows[i - 1].algbw);
    std::printf("\n");
  }
  if (!o.json_path.empty()) {
    FILE* f = std::fopen(o.json_path.c_str(), "w");
    TERN_CHECK_ARG(f != nullptr, "allreduce_bench: cannot write ", o.json_path);
    std::fprintf(f, "{\"ranks\": %d, \"repeats\": %d, \"dtype\": \"f32\", \"results\": [", n,
                 o.repeats);
    for (size_t i = 0; i < rows.size(); ++i) {
      const Row& r = rows[i];
      std::fprintf(f,
                   "%s\n  {\"size_mib\": %g, \"bytes\": %zu, \"mode\": \"%s\", \"median_s\": %.9g, "
                   "\"algbw_bytes_per_s\": %.6g, \"busbw_bytes_per_s\": %.6g",
                   i ? "," : "", r.size_mib, r.bytes, dist::reduce_mode_name(r.mode), r.median_s,
                   r.algbw, r.busbw);
      if (r.mode == ReduceMode::kDeterministic) {
        std::fprintf(f, ", \"deterministic_over_fast\": %.4f", r.algbw / rows[i - 1].algbw);
      }
      std::fprintf(f, "}");
    }
    std::fprintf(f, "\n]}\n");
    std::fclose(f);
  }
  return 0;
}

}  // namespace
}  // namespace tern::bench

int main(int argc, char** argv) {
  try {
    return tern::bench::run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "allreduce_bench: %s\n", e.what());
    return 1;
  }
}
