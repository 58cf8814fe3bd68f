// The training monitor: what fit() measured, returned in History::stats and printed at the end of
// fit (epoch times min/mean/max, steps/s, samples/s, time waiting for input, compute time).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tern::train {

struct FitStats {
  std::vector<double> epoch_seconds;  // each epoch's wall time, validation included
  int64_t steps = 0;                  // training batches run by this fit
  int64_t samples = 0;
  double train_seconds = 0;       // wall time of the epoch loops
  double input_wait_seconds = 0;  // blocked in the training iterator's next()
  double compute_seconds = 0;     // running the compiled train steps
  double validation_seconds = 0;
  // Memory of the device the steps ran on (its allocator: arenas, bound inputs and outputs, and
  // variables placed there), and the variables' total size.
  std::string device;              // "cpu:0"
  size_t peak_device_bytes = 0;    // peak in use during this fit
  size_t device_memory_limit = 0;  // 0 = none
  size_t variable_bytes = 0;

  double steps_per_second() const;
  double samples_per_second() const;
  double epoch_seconds_min() const;
  double epoch_seconds_mean() const;
  double epoch_seconds_max() const;
  // Three lines: "training monitor: ..." (the figures above).
  std::string report() const;
};

}  // namespace tern::train
