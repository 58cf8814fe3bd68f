// sum_depth_halves (depth_halves.h).
#include "tern/backends/cpu/depth_halves.h"

#include <omp.h>

#include <algorithm>
#include <vector>

#include "tern/backends/cpu/cpu_isa.h"

TERN_CPU_V3_BEGIN

namespace tern::cpu {

void sum_depth_halves(int64_t k, int64_t half, int64_t elements, float* c,
                      const std::function<void(int64_t k0, int64_t k1, float* dst)>& part) {
  float* partial = nullptr;
#pragma omp parallel num_threads(std::min(2, omp_get_max_threads())) if (!omp_in_parallel())
  {
    const int threads = omp_get_num_threads(), t = omp_get_thread_num();
    for (int which = t; which < 2; which += threads) {
      float* dst = c;
      if (which == 1) {
        thread_local std::vector<float> buf;
        buf.resize(static_cast<size_t>(elements));
        dst = partial = buf.data();
      }
      part(which == 0 ? 0 : half, which == 0 ? half : k, dst);
    }
#pragma omp barrier
    const int64_t first = elements * t / threads, last = elements * (t + 1) / threads;
#pragma omp simd
    for (int64_t i = first; i < last; ++i) c[i] += partial[i];
  }
}

}  // namespace tern::cpu

TERN_CPU_V3_END
