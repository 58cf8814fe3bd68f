// Transform analyze throughput on Fashion-MNIST TFRecords (BENCHMARKS.md, "Transform analyze"):
// the 60k training images as raw u8 pixels (`tern data convert ... --image-format raw`), analyzed
// with a spec of one image feature (scale_to_0_1 or z_score over all pixels) and the int64 label,
// next to reading the same file with no work (the bytes only; the bytes split into records with
// every CRC checked). Median of --repeats runs after one warm-up (the file in the page cache).
//
//   build/bench/transform_bench [--train FILE.tfrecord] [--repeats 5] [--threads 0]
//
// Without --train it converts /usr/share/datasets/fashion-mnist/train-*-ubyte.gz into a temp file.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <iostream>
#include <string>
#include <vector>

#include "bench/bench_clock.h"
#include "tern/base/thread_pool.h"
#include "tern/data/convert.h"
#include "tern/data/input_stream.h"
#include "tern/transform/analysis.h"
#include "tern/transform/records.h"

namespace {

using namespace tern;

constexpr const char* kDataDir = "/usr/share/datasets/fashion-mnist";

std::string spec_text(const char* op) {
  return std::string("[transform]\nlabel = \"image/class/label\"\n[[transform.features]]\n"
                     "input = \"image/encoded\"\nop = \"") +
         op + "\"\nshape = [28, 28, 1]\n";
}

struct Row {
  std::string what;
  double seconds = 0;
  int64_t bytes = 0;
};

Row measure(const std::string& what, int repeats, const std::function<int64_t()>& fn) {
  fn();  // warm-up: the file in the page cache, threads and allocations warmed
  std::vector<double> times;
  int64_t bytes = 0;
  for (int r = 0; r < repeats; ++r) {
    const double t0 = bench::wall_seconds();
    bytes = fn();
    times.push_back(bench::wall_seconds() - t0);
  }
  return {what, bench::median(times), bytes};
}

}  // namespace

int main(int argc, char** argv) {
  std::string train;
  int repeats = 5, threads = 0;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--train" && i + 1 < argc) {
      train = argv[++i];
    } else if (a == "--repeats" && i + 1 < argc) {
      repeats = std::max(1, std::atoi(argv[++i]));
    } else if (a == "--threads" && i + 1 < argc) {
      threads = std::atoi(argv[++i]);
    } else {
      std::cerr << "usage: transform_bench [--train FILE.tfrecord] [--repeats N] [--threads N]\n";
      return 2;
    }
  }
  try {
    std::string tmp;
    if (train.empty()) {
      std::string pattern = (std::filesystem::temp_directory_path() / "tern_transform_bench_XXXXXX").string();
      tmp = ::mkdtemp(pattern.data());
      train = tmp + "/train.tfrecord";
      data::convert_image_dataset(std::string(kDataDir) + "/train-images-idx3-ubyte.gz", train,
                                  {.labels = std::string(kDataDir) + "/train-labels-idx1-ubyte.gz",
                                   .image_format = "raw"});
    }
    const int64_t size = static_cast<int64_t>(std::filesystem::file_size(train));
    std::vector<Row> rows;
    rows.push_back(measure("read the bytes (no work)", repeats, [&] {
      auto in = data::InputStream::open(train, data::Compression::kNone);
      std::vector<char> buf(size_t{32} << 20);
      int64_t total = 0;
      while (size_t got = in->read(buf.data(), buf.size())) total += static_cast<int64_t>(got);
      return total;
    }));
    int64_t records = 0;
    rows.push_back(measure("split into records, CRCs checked", repeats, [&] {
      transform::RecordBlocks blocks(train);
      std::vector<std::string_view> recs;
      records = 0;
      while (blocks.next(recs)) records += static_cast<int64_t>(recs.size());
      return blocks.offset();
    }));
    for (const char* op : {"scale_to_0_1", "z_score"}) {
      transform::TransformSpec spec = transform::parse_transform_spec(spec_text(op), "bench.toml");
      rows.push_back(measure(std::string("analyze: image ") + op + " + label", repeats, [&] {
        return transform::analyze(spec, {train}, {.threads = threads}).bytes;
      }));
    }
    std::printf("transform analyze, %s: %lld records, %.1f MB, %d threads (%d cores), median of %d\n",
                train.c_str(), static_cast<long long>(records), size / 1e6,
                threads > 0 ? threads : available_cores(), available_cores(), repeats);
    std::printf("| what | time | throughput |\n|---|---:|---:|\n");
    for (const Row& r : rows)
      std::printf("| %s | %.3f s | %.0f MB/s |\n", r.what.c_str(), r.seconds,
                  r.bytes / 1e6 / r.seconds);
    if (!tmp.empty()) std::filesystem::remove_all(tmp);
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "transform_bench: " << e.what() << "\n";
    return 1;
  }
}
