// Timing an input pipeline alone (what `tern data bench` and bench/image_pipeline_bench.cc run):
// whole passes, each with a fresh iterator, and the iterator's per-stage statistics.
//
//   PipelineLine line = parse_pipeline_line("images DIR | decode | batch 64 | prefetch");
//   DatasetPtr ds = build_input_pipeline(line.spec, line.inputs, PipelineMode::kTrain);
//   PipelineBenchResult r = bench_input_pipeline(ds, yields_batches(line.spec,
//                                                PipelineMode::kTrain), /*epochs=*/2);
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "tern/data/dataset.h"

namespace tern::data {

struct PipelineBenchResult {
  int64_t batches = 0;  // elements taken (batches when the pipeline batches)
  int64_t rows = 0;     // rows: the leading dimension of component 0 of each batch
  double seconds = 0;
  std::string stats;  // the last timed pass's per-stage report
  double rows_per_second() const { return seconds > 0 ? static_cast<double>(rows) / seconds : 0; }
};

// Runs `warmup_epochs` untimed passes, then `epochs` timed ones (pass e uses iterator epoch e);
// max_batches >= 0 stops each pass early. `batched`: count rows by the leading dimension of
// component 0 instead of one per element.
// `progress`, when set, is called after every element: (pass, passes, elements taken in this pass).
using BenchProgress = std::function<void(int64_t pass, int64_t passes, int64_t taken)>;
PipelineBenchResult bench_input_pipeline(const DatasetPtr& dataset, bool batched,
                                         int64_t epochs = 1, int64_t warmup_epochs = 0,
                                         int64_t max_batches = -1,
                                         const BenchProgress& progress = {});

}  // namespace tern::data
