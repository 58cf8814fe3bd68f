// `tern data inspect | convert | bench`: flags and printing around tern/data's inspect_data_file,
// convert_image_dataset, parse_pipeline_line and bench_input_pipeline.
#include <CLI/CLI.hpp>

#include <iomanip>
#include <iostream>

#include "tern/base/thread_pool.h"
#include "tern/data/convert.h"
#include "tern/data/inspect.h"
#include "tern/data/pipeline_bench.h"
#include "tern/data/pipeline_line.h"
#include "tools/tern/cli_parse.h"
#include "tools/tern/commands.h"

namespace tern::tools {
namespace {

// "64" or "64x48" as height and width.
bool parse_size(const std::string& text, int64_t* h, int64_t* w) {
  try {
    const size_t x = text.find('x');
    *h = std::stoll(text.substr(0, x));
    *w = x == std::string::npos ? *h : std::stoll(text.substr(x + 1));
    return *h > 0 && *w > 0;
  } catch (const std::exception&) {
    return false;
  }
}

int inspect(int argc, char** argv) {
  CLI::App app{"Count the records of a TFRecord / IDX / CSV file and show the first ones.",
               "tern data inspect"};
  std::string path;
  data::InspectOptions o;
  app.add_option("file", path, "TFRecord, IDX (gzip ok) or CSV file")->required();
  app.add_option("-n,--records", o.records, "records shown in full (default 3)");
  app.add_option("--format", o.format, "auto | tfrecord | idx | csv");
  app.add_option("--compression", o.compression, "auto | none | gzip | zlib");
  if (int rc = parse(app, argc, argv); rc >= 0) return rc;
  data::inspect_data_file(path, o, std::cout);
  return 0;
}

int convert(int argc, char** argv) {
  CLI::App app{
      "Convert between IDX, TFRecord (tf.train.Example) and image folders:\n"
      "  IDX -> TFRecord:       tern data convert train-images.gz out.tfrecord --labels "
      "train-labels.gz\n"
      "  IDX -> image folder:   tern data convert train-images.gz DIR --labels train-labels.gz "
      "--size 64 --channels 3 --image-format jpeg\n"
      "  image folder -> TFRecord: tern data convert DIR out.tfrecord\n"
      "  TFRecord -> image folder: tern data convert in.tfrecord DIR",
      "tern data convert"};
  std::string input, output, size, class_names;
  data::ConvertOptions o;
  app.add_option("input", input, "IDX file, TFRecord file or image folder")->required();
  app.add_option("output", output, "*.tfrecord file or image-folder directory")->required();
  app.add_option("--labels", o.labels, "IDX labels file (IDX input)");
  app.add_option("--image-format", o.image_format, "jpeg | png | raw (default: keep, or png)");
  app.add_option("--quality", o.jpeg_quality, "JPEG quality 1-100 (default 95)");
  app.add_option("--size", size, "resize to HxW (or N for NxN), bilinear");
  app.add_option("--channels", o.channels, "1 (gray) or 3 (gray replicated to RGB)");
  app.add_option("--limit", o.limit, "convert only the first N images");
  app.add_option("--compression", o.compression, "TFRecord output: none | gzip | zlib");
  app.add_option("--class-names", class_names, "comma-separated folder names for labels 0, 1, ...");
  if (int rc = parse(app, argc, argv); rc >= 0) return rc;
  if (!size.empty() && !parse_size(size, &o.height, &o.width)) {
    std::cerr << "tern data convert: --size must be N or HxW, got '" << size << "'\n";
    return 2;
  }
  for (size_t start = 0; !class_names.empty() && start <= class_names.size();) {
    const size_t comma = class_names.find(',', start);
    o.class_names.push_back(class_names.substr(start, comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  std::cout << data::convert_image_dataset(input, output, o).summary << "\n";
  return 0;
}

int bench(int argc, char** argv) {
  CLI::App app{
      "Throughput of an input pipeline alone, with per-stage statistics. The pipeline is one\n"
      "argument, stages separated by '|', e.g.\n"
      "  'images DIR | shuffle 1024 | decode | crop 56 56 | flip | normalize mean=0.5 std=0.5 |\n"
      "   batch 128 | prefetch'\n"
      "Sources: images DIR, files PATTERN..., tfrecord FILE... [compression=gzip], idx IMAGES "
      "[LABELS].\n"
      "Transforms: parse_example [FEATURE...], decode [channels=C], resize H W, crop H W, flip,\n"
      "brightness D, contrast LO HI, normalize [mean=..] [std=..], shuffle N [seed=S],\n"
      "batch N [drop_remainder], prefetch [N], repeat [N], take N, skip N, cache.\n"
      "Consecutive image stages run as one parallel map (tern/data/pipeline_line.h).",
      "tern data bench"};
  std::string line;
  data::PipelineLineOptions po;
  int64_t epochs = 1, warmup = 0, max_batches = -1;
  app.add_option("pipeline", line, "the pipeline (quote it)")->required();
  app.add_option("--threads", po.map_threads, "map threads (default: AUTOTUNE, -1)");
  app.add_option("--seed", po.seed, "seed of the random stages");
  app.add_option("--epochs", epochs, "timed passes (default 1)");
  app.add_option("--warmup-epochs", warmup, "untimed passes first (default 0)");
  app.add_option("--max-batches", max_batches, "stop each pass after this many elements");
  if (int rc = parse(app, argc, argv); rc >= 0) return rc;
  if (po.map_threads != 0) {
    if (std::string why = thread_count_problem(po.map_threads, false, true); !why.empty()) {
      std::cerr << "tern data bench: --threads " << why << " (0: on the consumer's thread)\n";
      return 2;
    }
  }
  const data::PipelineLine p = data::parse_pipeline_line(line, po);
  const auto mode = data::PipelineMode::kTrain;
  const std::vector<std::string> stages = data::describe_pipeline(p.spec, mode);
  std::cout << "pipeline:";
  for (size_t i = 0; i < stages.size(); ++i) std::cout << (i ? " -> " : " ") << stages[i];
  std::cout << "\n";
  const bool batched = data::yields_batches(p.spec, mode);
  const data::PipelineBenchResult r = data::bench_input_pipeline(
      data::build_input_pipeline(p.spec, p.inputs, mode), batched, epochs, warmup, max_batches);
  std::cout << std::fixed << std::setprecision(2) << r.rows
            << (batched ? " rows in " : " elements in ") << r.batches
            << (batched ? " batches" : " steps") << ", " << r.seconds
            << " s: " << std::setprecision(1) << r.rows_per_second()
            << (batched ? " rows/s" : " elements/s") << "\nper-stage statistics (last pass):\n"
            << r.stats;
  return 0;
}

}  // namespace

int cmd_data(int argc, char** argv) {
  const std::string usage =
      "usage: tern data <inspect|convert|bench> ...\n"
      "  inspect FILE          count the records of a TFRecord / IDX / CSV file, show the first\n"
      "  convert INPUT OUTPUT  IDX / image folder / TFRecord conversions\n"
      "  bench PIPELINE        throughput of a pipeline alone, with per-stage statistics\n"
      "'tern data <subcommand> --help' describes one.\n";
  if (argc < 2) {
    std::cerr << usage;
    return 2;
  }
  const std::string sub = argv[1];
  if (sub == "--help" || sub == "-h") {
    std::cout << usage;
    return 0;
  }
  if (sub == "inspect") return inspect(argc - 1, argv + 1);
  if (sub == "convert") return convert(argc - 1, argv + 1);
  if (sub == "bench") return bench(argc - 1, argv + 1);
  std::cerr << "tern data: unknown subcommand '" << sub << "'\n" << usage;
  return 2;
}

}  // namespace tern::tools
