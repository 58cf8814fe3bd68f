// bench_input_pipeline: timed passes over a dataset.
#include "tern/data/pipeline_bench.h"

#include <chrono>

#include "tern/base/error.h"
#include "tern/data/iterator.h"

namespace tern::data {

PipelineBenchResult bench_input_pipeline(const DatasetPtr& dataset, bool batched, int64_t epochs,
                                         int64_t warmup_epochs, int64_t max_batches,
                                         const BenchProgress& progress) {
  TERN_CHECK_ARG(epochs >= 1, "bench: epochs must be >= 1, got ", epochs);
  TERN_CHECK_ARG(dataset != nullptr, "bench: no dataset");
  PipelineBenchResult r;
  for (int64_t e = 0; e < warmup_epochs + epochs; ++e) {
    const bool timed = e >= warmup_epochs;
    const auto t0 = std::chrono::steady_clock::now();
    Iterator it = dataset->make_iterator(static_cast<uint64_t>(e));
    int64_t batches = 0, rows = 0;
    while (max_batches < 0 || batches < max_batches) {
      std::optional<Element> b = it.next();
      if (!b) break;
      ++batches;
      rows += batched && !b->empty() && (*b)[0].rank() > 0 ? (*b)[0].shape().dim(0) : 1;
      if (progress) progress(e, warmup_epochs + epochs, batches);
    }
    if (!timed) continue;
    r.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    r.batches += batches;
    r.rows += rows;
    r.stats = it.stats_report();
  }
  return r;
}

}  // namespace tern::data
