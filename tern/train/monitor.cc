// FitStats derived figures and the end-of-fit report.
#include "tern/train/monitor.h"

#include <algorithm>
#include <cstdio>
#include <numeric>

#include "tern/device/allocator.h"

namespace tern::train {
namespace {

double ratio(double a, double b) {
  return b > 0 ? a / b : 0;
}

}  // namespace

double FitStats::steps_per_second() const {
  return ratio(static_cast<double>(steps), train_seconds);
}
double FitStats::samples_per_second() const {
  return ratio(static_cast<double>(samples), train_seconds);
}

double FitStats::epoch_seconds_min() const {
  return epoch_seconds.empty() ? 0 : *std::min_element(epoch_seconds.begin(), epoch_seconds.end());
}
double FitStats::epoch_seconds_max() const {
  return epoch_seconds.empty() ? 0 : *std::max_element(epoch_seconds.begin(), epoch_seconds.end());
}
double FitStats::epoch_seconds_mean() const {
  double total = std::accumulate(epoch_seconds.begin(), epoch_seconds.end(), 0.0);
  return ratio(total, static_cast<double>(epoch_seconds.size()));
}

std::string FitStats::report() const {
  char buf[512];
  std::snprintf(buf, sizeof(buf),
                "training monitor: %zu epochs in %.2f s (epoch min %.2f / mean %.2f / max %.2f s), "
                "%lld steps, %.1f steps/s, %.0f samples/s\n"
                "  input wait %.3f s (%.1f%%), compute %.3f s (%.1f%%), validation %.3f s\n",
                epoch_seconds.size(), train_seconds, epoch_seconds_min(), epoch_seconds_mean(),
                epoch_seconds_max(), static_cast<long long>(steps), steps_per_second(),
                samples_per_second(), input_wait_seconds,
                100 * ratio(input_wait_seconds, train_seconds), compute_seconds,
                100 * ratio(compute_seconds, train_seconds), validation_seconds);
  std::string out = buf;
  out += "  memory: peak " + format_bytes(peak_device_bytes) + " on " + device + " (limit " +
         (device_memory_limit ? format_bytes(device_memory_limit) : std::string("none")) +
         "), variables " + format_bytes(variable_bytes) + "\n";
  return out;
}

}  // namespace tern::train
