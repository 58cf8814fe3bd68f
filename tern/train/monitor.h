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

  double steps_per_second() const;
  double samples_per_second() const;
  double epoch_seconds_min() const;
  double epoch_seconds_mean() const;
  double epoch_seconds_max() const;
  // Two lines: "training monitor: ..." (the figures above).
  std::string report() const;
};

}  // namespace tern::train
