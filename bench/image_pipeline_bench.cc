// Image input-pipeline benchmark, tern side (bench/run_image_pipeline_bench.sh runs it next to
// bench/image_pipeline_bench_torch.py): an image folder of JPEGs -> shuffle -> read + decode ->
// random crop -> random flip -> normalize -> batch -> prefetch, the work PyTorch's DataLoader +
// torchvision transforms do in the torch script. Without --dir it first writes Fashion-MNIST's
// first --count training images as --size x --size RGB JPEGs (what `tern data convert` does).
// Tries each map-thread count up to the core count and AUTOTUNE, and reports the best.
//
// Usage: image_pipeline_bench [--dir DIR] [--count 10000] [--size 64] [--crop 56] [--batch 128]
//                             [--epochs 2] [--fashion-mnist DIR]
// Output: one line per thread setting, tab-separated: "tern", threads, images/s; then the best.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <string>

#include "tern/base/thread_pool.h"
#include "tern/data/convert.h"
#include "tern/data/dataset.h"
#include "tern/data/pipeline_bench.h"
#include "tern/data/pipeline_line.h"

namespace {

struct Args {
  std::string dir;
  std::string fashion_mnist = "/usr/share/datasets/fashion-mnist";
  int64_t count = 10000, size = 64, crop = 56, batch = 128, epochs = 2;
};

Args parse_args(int argc, char** argv) {
  Args a;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--dir")
      a.dir = v;
    else if (k == "--fashion-mnist")
      a.fashion_mnist = v;
    else if (k == "--count")
      a.count = std::stoll(v);
    else if (k == "--size")
      a.size = std::stoll(v);
    else if (k == "--crop")
      a.crop = std::stoll(v);
    else if (k == "--batch")
      a.batch = std::stoll(v);
    else if (k == "--epochs")
      a.epochs = std::stoll(v);
    else {
      std::cerr << "unknown flag " << k << "\n";
      std::exit(2);
    }
  }
  return a;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace tern;
  Args a = parse_args(argc, argv);
  if (a.dir.empty()) {
    a.dir = (std::filesystem::temp_directory_path() / "tern_image_pipeline_bench").string();
    std::filesystem::remove_all(a.dir);
    data::ConvertOptions o{.labels = a.fashion_mnist + "/train-labels-idx1-ubyte.gz",
                           .image_format = "jpeg",
                           .height = a.size,
                           .width = a.size,
                           .channels = 3,
                           .limit = a.count};
    std::cerr << data::convert_image_dataset(a.fashion_mnist + "/train-images-idx3-ubyte.gz", a.dir,
                                             o)
                     .summary
              << "\n";
  }
  const std::string spec = str_cat(
      "images ", a.dir, " | shuffle 1000000 | decode | crop ", a.crop, " ", a.crop,
      " | flip | normalize mean=0.5,0.5,0.5 std=0.5,0.5,0.5 | batch ", a.batch, " | prefetch");
  std::vector<int64_t> settings;
  for (int64_t t = 1; t <= available_cores(); ++t) settings.push_back(t);
  settings.push_back(data::kAutotune);
  double best = 0;
  int64_t best_threads = 0;
  std::string best_stats;
  for (int64_t threads : settings) {
    const data::PipelineLine p =
        data::parse_pipeline_line(spec, {.map_threads = threads, .seed = 1});
    const data::PipelineBenchResult r = data::bench_input_pipeline(
        data::build_input_pipeline(p.spec, p.inputs, data::PipelineMode::kTrain), /*batched=*/true,
        a.epochs, /*warmup_epochs=*/1);
    const double rate = r.rows_per_second();
    std::printf("tern\t%s\t%.1f\n",
                threads == data::kAutotune ? "autotune" : std::to_string(threads).c_str(), rate);
    std::fflush(stdout);
    if (rate > best) {
      best = rate;
      best_threads = threads;
      best_stats = r.stats;
    }
  }
  std::printf("tern_best\t%s\t%.1f\n",
              best_threads == data::kAutotune ? "autotune" : std::to_string(best_threads).c_str(),
              best);
  std::fflush(stdout);
  std::cerr << "per-stage statistics of the best run (last epoch):\n" << best_stats;
  return 0;
}
