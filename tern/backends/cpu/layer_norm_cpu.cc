// Vectorized layer_norm / layer_norm_grad for f32 (normalization over the last axis, rows spread
// over OpenMP threads). Before this only the reference kernel existed: a Transformer step
// (bench W6: 8 layer norms over [32, 128, 256]) spent ~40 ms in them on one thread.
//   layer_norm:      per row: mean, variance around the mean (two passes over the row, which sits
//                    in L1), y = (x - mean) * rstd * gamma + beta; outputs mean and rstd.
//   layer_norm_grad: per row: g = dy * gamma, dx = rstd * (g - mean(g) - xhat * mean(g * xhat));
//                    dgamma = sum(dy * xhat), dbeta = sum(dy) over rows, per thread in f32 blocks
//                    of kRowBlock rows, combined in f64 in thread order (reproducible for a given
//                    thread count).
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "tern/backends/cpu/cpu_isa.h"
#include "tern/backends/cpu/cpu_kernels.h"

TERN_CPU_V3_BEGIN  // the code below is x86-64-v3 (cpu_isa.h)

namespace tern::cpu {
namespace {

using kernels::KernelContext;

constexpr int64_t kRowBlock = 64;
constexpr int64_t kParallelThreshold = 1 << 14;  // elements below which one thread runs

struct Rows {
  int64_t d = 0, rows = 0;
  int threads = 1;
  int nthreads() const {
    return d * rows >= kParallelThreshold && !omp_in_parallel() ? threads : 1;
  }
  void range(int t, int n, int64_t* r0, int64_t* r1) const {
    int64_t per = (rows + n - 1) / n;
    *r0 = std::min(rows, per * t);
    *r1 = std::min(rows, *r0 + per);
  }
};

Rows rows_of(const TensorType& x) {
  Rows r;
  r.d = x.shape.rank() ? x.shape[x.shape.rank() - 1] : 1;
  r.rows = r.d ? x.shape.num_elements() / r.d : 0;
  r.threads = std::max(1, omp_get_max_threads());
  return r;
}

class LayerNormKernel final : public kernels::Kernel {
 public:
  explicit LayerNormKernel(const kernels::KernelSignature& sig)
      : r_(rows_of(sig.inputs[0])), eps_(sig.attrs->get_float("epsilon")) {}

  void run(KernelContext& ctx) override {
    const float* x = ctx.inputs[0].data<float>();
    const float* gamma = ctx.inputs[1].data<float>();
    const float* beta = ctx.inputs[2].data<float>();
    float* y = ctx.outputs[0].data<float>();
    float* mean_out = ctx.outputs[1].data<float>();
    float* rstd_out = ctx.outputs[2].data<float>();
    const int64_t d = r_.d;
    const float inv_d = d ? 1.0f / static_cast<float>(d) : 0.0f;
    const int n = r_.nthreads();
#pragma omp parallel for num_threads(n) schedule(static) if (n > 1)
    for (int64_t i = 0; i < r_.rows; ++i) {
      const float* xi = x + i * d;
      float* yi = y + i * d;
      float sum = 0;
#pragma omp simd reduction(+ : sum)
      for (int64_t j = 0; j < d; ++j) sum += xi[j];
      const float mean = sum * inv_d;
      float sq = 0;
#pragma omp simd reduction(+ : sq)
      for (int64_t j = 0; j < d; ++j) sq += (xi[j] - mean) * (xi[j] - mean);
      const float rstd =
          static_cast<float>(1.0 / std::sqrt(static_cast<double>(sq * inv_d) + eps_));
#pragma omp simd
      for (int64_t j = 0; j < d; ++j) yi[j] = (xi[j] - mean) * rstd * gamma[j] + beta[j];
      mean_out[i] = mean;
      rstd_out[i] = rstd;
    }
  }

 private:
  Rows r_;
  double eps_;
};

class LayerNormGradKernel final : public kernels::Kernel {
 public:
  explicit LayerNormGradKernel(const kernels::KernelSignature& sig) : r_(rows_of(sig.inputs[1])) {
    size_t per = static_cast<size_t>(r_.d) * static_cast<size_t>(r_.threads);
    block_.assign(2 * per, 0.0f);
    sums_.assign(2 * per, 0.0);
  }

  void run(KernelContext& ctx) override {
    const float* dy = ctx.inputs[0].data<float>();
    const float* x = ctx.inputs[1].data<float>();
    const float* gamma = ctx.inputs[2].data<float>();
    const float* mean = ctx.inputs[3].data<float>();
    const float* rstd = ctx.inputs[4].data<float>();
    float* dx = ctx.outputs[0].data<float>();
    float* dgamma = ctx.outputs[1].data<float>();
    float* dbeta = ctx.outputs[2].data<float>();
    const int64_t d = r_.d;
    const size_t ds = static_cast<size_t>(d);
    const float inv_d = d ? 1.0f / static_cast<float>(d) : 0.0f;
    const int n = r_.nthreads();
    std::fill(sums_.begin(), sums_.end(), 0.0);
#pragma omp parallel num_threads(n) if (n > 1)
    {
      const int t = n > 1 ? omp_get_thread_num() : 0;
      int64_t r0, r1;
      r_.range(t, n, &r0, &r1);
      float* bg = &block_[2 * ds * static_cast<size_t>(t)];
      float* bb = bg + d;
      double* sg = &sums_[2 * ds * static_cast<size_t>(t)];
      double* sb = sg + d;
      for (int64_t blk = r0; blk < r1; blk += kRowBlock) {
        std::fill(bg, bg + d, 0.0f);
        std::fill(bb, bb + d, 0.0f);
        for (int64_t i = blk; i < std::min(r1, blk + kRowBlock); ++i) {
          const float* gi = dy + i * d;
          const float* xi = x + i * d;
          float* dxi = dx + i * d;
          const float mu = mean[i], rs = rstd[i];
          float mg = 0, mgx = 0;
#pragma omp simd reduction(+ : mg, mgx)
          for (int64_t j = 0; j < d; ++j) {
            float g = gi[j] * gamma[j];
            float xhat = (xi[j] - mu) * rs;
            mg += g;
            mgx += g * xhat;
            bg[j] += gi[j] * xhat;
            bb[j] += gi[j];
          }
          mg *= inv_d;
          mgx *= inv_d;
#pragma omp simd
          for (int64_t j = 0; j < d; ++j) {
            float xhat = (xi[j] - mu) * rs;
            dxi[j] = rs * (gi[j] * gamma[j] - mg - xhat * mgx);
          }
        }
        for (int64_t j = 0; j < d; ++j) {
          sg[j] += bg[j];
          sb[j] += bb[j];
        }
      }
    }
    for (int64_t j = 0; j < d; ++j) {
      double g = 0, b = 0;
      for (int t = 0; t < n; ++t) {
        g += sums_[2 * ds * static_cast<size_t>(t) + static_cast<size_t>(j)];
        b += sums_[2 * ds * static_cast<size_t>(t) + ds + static_cast<size_t>(j)];
      }
      dgamma[j] = static_cast<float>(g);
      dbeta[j] = static_cast<float>(b);
    }
  }

 private:
  Rows r_;
  std::vector<float> block_;  // [threads][2][d]
  std::vector<double> sums_;  // [threads][2][d]
};

}  // namespace

void register_layer_norm_kernels(kernels::KernelRegistry& r) {
  kernels::KernelCandidate fwd;
  fwd.name = "cpu_vec";
  fwd.dtypes = {DType::kF32};
  fwd.priority = kVectorPriority;
  fwd.create = [](const kernels::KernelSignature& sig) -> std::unique_ptr<kernels::Kernel> {
    return std::make_unique<LayerNormKernel>(sig);
  };
  r.add("layer_norm", std::move(fwd));
  kernels::KernelCandidate bwd;
  bwd.name = "cpu_vec";
  bwd.dtypes = {DType::kF32};
  bwd.priority = kVectorPriority;
  bwd.create = [](const kernels::KernelSignature& sig) -> std::unique_ptr<kernels::Kernel> {
    return std::make_unique<LayerNormGradKernel>(sig);
  };
  r.add("layer_norm_grad", std::move(bwd));
}

}  // namespace tern::cpu

TERN_CPU_V3_END
