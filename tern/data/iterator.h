// Iterator: runs a dataset. next() yields elements in order; save_state()/restore_state() give
// exact resume (a blob restored into an iterator of the same pipeline continues where the saved
// one stopped); stats() reports per-stage throughput and wait times.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "tern/data/dataset.h"
#include "tern/data/pipeline_stats.h"

namespace tern::data {

class Iterator {
 public:
  Iterator(DatasetPtr dataset, uint64_t epoch = 0);
  ~Iterator();
  Iterator(Iterator&&) noexcept;
  Iterator& operator=(Iterator&&) noexcept;

  // The next element, or nullopt at the end (and on every call after it).
  std::optional<Element> next();
  // Up to `max_elements` more elements (all remaining if negative).
  std::vector<Element> take(int64_t max_elements = -1);

  // The position of every stage, including shuffle buffers, RNG positions and prefetched
  // elements. Background stages pause while saving and resume on the next next().
  std::string save_state();
  // Restores a blob from save_state() of an iterator over the same pipeline. DataLoss if the
  // blob is corrupt, InvalidArgument naming the first mismatching key if the pipeline differs.
  void restore_state(std::string_view blob);

  std::vector<StageStats> stats() const;
  std::string stats_report() const;
  const DatasetPtr& dataset() const { return dataset_; }

 private:
  DatasetPtr dataset_;
  uint64_t epoch_;
  std::shared_ptr<PipelineStats> stats_;
  std::unique_ptr<IteratorBase> root_;
};

}  // namespace tern::data
