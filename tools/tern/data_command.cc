// `tern data inspect | convert | bench`: flags and printing around tern/data's inspect_data_file,
// convert_image_dataset, parse_pipeline_line and bench_input_pipeline.
#include <unistd.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <charconv>
#include <iomanip>
#include <iostream>
#include <string_view>

#include "tern/base/progress_line.h"
#include "tern/base/terminal.h"
#include "tern/base/thread_pool.h"
#include "tern/data/convert.h"
#include "tern/data/inspect.h"
#include "tern/data/pipeline_bench.h"
#include "tern/data/pipeline_line.h"
#include "tools/tern/cli_parse.h"
#include "tools/tern/commands.h"

namespace tern::tools {
namespace {

// "64" or "64x48" as height and width (whole positive numbers, nothing else).
bool parse_size(const std::string& text, int64_t* h, int64_t* w) {
  auto whole = [](std::string_view s, int64_t* v) {
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), *v);
    return ec == std::errc() && end == s.data() + s.size() && *v > 0;
  };
  const size_t x = text.find('x');
  if (x == std::string::npos) return whole(text, h) && whole(text, w);
  return whole(std::string_view(text).substr(0, x), h) &&
         whole(std::string_view(text).substr(x + 1), w);
}

struct InspectFlags {
  std::string path;
  data::InspectOptions o;
};

void add_inspect(CLI::App& app, InspectFlags& f) {
  CLI::App* sub = app.add_subcommand(
      "inspect", "count the records of a TFRecord / IDX / CSV file and show the first ones");
  sub->add_option("file", f.path, "TFRecord, IDX (gzip ok) or CSV file")->required();
  sub->add_option("-n,--records", f.o.records, "records shown in full (default 3)");
  sub->add_option("--format", f.o.format, "auto | tfrecord | idx | csv");
  sub->add_option("--compression", f.o.compression, "auto | none | gzip | zlib");
}

int inspect(InspectFlags& f) {
  data::inspect_data_file(f.path, f.o, std::cout);
  return 0;
}

struct ConvertFlags {
  std::string input, output, size, class_names;
  data::ConvertOptions o;
};

void add_convert(CLI::App& app, ConvertFlags& f) {
  CLI::App* sub = app.add_subcommand(
      "convert", "convert between IDX, TFRecord (tf.train.Example) and image folders");
  sub->footer(
      "examples:\n"
      "  IDX -> TFRecord:\n"
      "    tern data convert train-images.gz out.tfrecord --labels train-labels.gz\n"
      "  IDX -> image folder:\n"
      "    tern data convert train-images.gz DIR --labels train-labels.gz --size 64 \\\n"
      "      --channels 3 --image-format jpeg\n"
      "  image folder -> TFRecord:\n"
      "    tern data convert DIR out.tfrecord\n"
      "  TFRecord -> image folder:\n"
      "    tern data convert in.tfrecord DIR");
  sub->add_option("input", f.input, "IDX file, TFRecord file or image folder")->required();
  sub->add_option("output", f.output, "*.tfrecord file or image-folder directory")->required();
  sub->add_option("--labels", f.o.labels, "IDX labels file (IDX input)");
  sub->add_option("--image-format", f.o.image_format, "jpeg | png | raw (default: keep, or png)");
  sub->add_option("--quality", f.o.jpeg_quality, "JPEG quality 1-100 (default 95)");
  sub->add_option("--size", f.size, "resize to HxW (or N for NxN), bilinear");
  sub->add_option("--channels", f.o.channels, "1 (gray) or 3 (gray replicated to RGB)");
  sub->add_option("--limit", f.o.limit, "convert only the first N images");
  sub->add_option("--compression", f.o.compression, "TFRecord output: none | gzip | zlib");
  sub->add_option("--class-names", f.class_names,
                  "comma-separated folder names for labels 0, 1, ...");
}

int convert(ConvertFlags& f) {
  data::ConvertOptions& o = f.o;
  if (!f.size.empty() && !parse_size(f.size, &o.height, &o.width))
    usage_error("--size must be N or HxW, got '", f.size, "'");
  const std::string& names = f.class_names;
  for (size_t start = 0; !names.empty() && start <= names.size();) {
    const size_t comma = names.find(',', start);
    o.class_names.push_back(names.substr(start, comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  std::string summary;
  {
    ProgressLine line(std::cerr, "convert", "images", -1, is_interactive_terminal(STDERR_FILENO));
    o.progress = [&](int64_t done, int64_t total) {
      line.set_total(total);
      line.update(done);
    };
    summary = data::convert_image_dataset(f.input, f.output, o).summary;
  }
  std::cout << summary << "\n";
  return 0;
}

struct BenchFlags {
  std::string line;
  data::PipelineLineOptions po;
  int64_t epochs = 1, warmup = 0, max_batches = -1;
};

void add_bench(CLI::App& app, BenchFlags& f) {
  CLI::App* sub = app.add_subcommand(
      "bench", "throughput of an input pipeline alone, with per-stage statistics");
  sub->footer(
      "The pipeline is one argument, stages separated by '|', e.g.\n"
      "  'images DIR | shuffle 1024 | decode | crop 56 56 | flip |\n"
      "   normalize mean=0.5 std=0.5 | batch 128 | prefetch'\n"
      "Sources: images DIR, files PATTERN..., tfrecord FILE... [compression=gzip], idx IMAGES "
      "[LABELS].\n"
      "Transforms: parse_example [FEATURE...], decode [channels=C], resize H W, crop H W, flip, "
      "brightness D, contrast LO HI, normalize [mean=..] [std=..], shuffle N [seed=S], batch N "
      "[drop_remainder], prefetch [N], repeat [N], take N, skip N, cache.\n"
      "Consecutive image stages run as one parallel map (tern/data/pipeline_line.h).");
  sub->add_option("pipeline", f.line, "the pipeline (quote it)")->required();
  sub->add_option("--threads", f.po.map_threads, "map threads (default: AUTOTUNE, -1)");
  sub->add_option("--seed", f.po.seed, "seed of the random stages");
  sub->add_option("--epochs", f.epochs, "timed passes (default 1)");
  sub->add_option("--warmup-epochs", f.warmup, "untimed passes first (default 0)");
  sub->add_option("--max-batches", f.max_batches, "stop each pass after this many elements");
}

int bench(BenchFlags& f) {
  if (f.po.map_threads != 0) {
    if (std::string why = thread_count_problem(f.po.map_threads, false, true); !why.empty()) {
      std::cerr << "tern data bench: --threads " << why << " (0: on the consumer's thread)\n";
      return kExitUsage;
    }
  }
  const data::PipelineLine p = data::parse_pipeline_line(f.line, f.po);
  const auto mode = data::PipelineMode::kTrain;
  const std::vector<std::string> stages = data::describe_pipeline(p.spec, mode);
  std::cout << "pipeline:";
  for (size_t i = 0; i < stages.size(); ++i) std::cout << (i ? " -> " : " ") << stages[i];
  std::cout << "\n";
  const bool batched = data::yields_batches(p.spec, mode);
  const data::DatasetPtr ds = data::build_input_pipeline(p.spec, p.inputs, mode);
  int64_t per_pass = ds->cardinality();
  if (f.max_batches >= 0)
    per_pass = per_pass < 0 ? f.max_batches : std::min(per_pass, f.max_batches);
  data::PipelineBenchResult r;
  {
    // One line per pass, warm-up ones included: its count, rate and ETA are that pass's (a
    // measured pass is what the summary reports). A source of unknown size gets its total from
    // the first pass.
    const int64_t passes = f.warmup + f.epochs;
    ProgressLine line(std::cerr, "bench", batched ? "batches" : "elements", per_pass,
                      is_interactive_terminal(STDERR_FILENO));
    int64_t current_pass = 0, last = 0;
    r = data::bench_input_pipeline(
        ds, batched, f.epochs, f.warmup, f.max_batches, [&](int64_t pass, int64_t, int64_t taken) {
          if (pass != current_pass) {
            if (per_pass < 0 && current_pass == 0) per_pass = last;
            line.restart(per_pass);
            current_pass = pass;
          }
          last = taken;
          line.update(taken, str_cat("pass ", pass + 1, "/", passes,
                                     pass < f.warmup ? " (warm-up)" : " (measured)"));
        });
  }
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
  CLI::App app{"Inspect, convert and benchmark input data (TFRecord, IDX, CSV, image folders).",
               "tern data"};
  init_app(app);
  app.require_subcommand(1);
  InspectFlags inspect_flags;
  ConvertFlags convert_flags;
  BenchFlags bench_flags;
  add_inspect(app, inspect_flags);
  add_convert(app, convert_flags);
  add_bench(app, bench_flags);
  if (int rc = parse(app, argc, argv); rc >= 0) return rc;
  if (app.got_subcommand("inspect")) return inspect(inspect_flags);
  if (app.got_subcommand("convert")) return convert(convert_flags);
  return bench(bench_flags);
}

}  // namespace tern::tools
