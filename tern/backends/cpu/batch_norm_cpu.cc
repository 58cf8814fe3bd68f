// Vectorized batch_norm_training / batch_norm_inference / batch_norm_grad for f32 channels-last
// data (x viewed as [M, C], statistics over M), and training / grad in the mixed form of the
// mixed_bfloat16 policy: bf16 x, dy, y, dx with f32 gamma, beta and statistics (bf16 values are
// widened on load and rounded on store; all arithmetic is the f32 path's). Tried before oneDNN's
// batch normalization: that kernel synchronizes its threads with spinning barriers inside one
// parallel region, and on a machine whose cores are shared a barrier waits for a descheduled
// thread: the MLP of bench W2
// ([128, 512] and [128, 256]) measured 7 ms of CPU per batch_norm_training with 2 threads against
// 0.05 ms with one. Here every parallel region is a plain OpenMP loop over row blocks (its only
// synchronization is the region's end, which follows OMP_WAIT_POLICY):
//   training:  per-thread sums of (x - shift) and (x - shift)^2 (shift = row 0, for a variance
//              without cancellation), combined in f64; then y = x * scale + bias in one pass.
//   grad:      per-thread sums of dy and dy * (x - mean); then dx = a * dy + b * x + c.
//   inference: y = x * scale + bias.
// With activation = "relu" (the relu after a batch norm folded in by fuse_norm_activation),
// training stores relu(y) from the same pass and grad reads dy only where the forward's output y
// is > 0 (relu_grad's rule), in both of its passes: one pass over the activations less each way.
// A residual input (a ResNet block's shortcut, folded in by the same pass) is added to y as
// stored, before the relu, in training's output pass.
// Results depend on the thread count only through the order of the f64 combination of the
// per-thread sums (fixed for a given thread count), so runs are reproducible.
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <type_traits>
#include <vector>

#include "tern/backends/cpu/cpu_isa.h"
#include "tern/backends/cpu/cpu_kernels.h"

TERN_CPU_V3_BEGIN  // the code below is x86-64-v3 (cpu_isa.h)

namespace tern::cpu {
namespace {

using kernels::KernelContext;

constexpr int64_t kRowBlock = 64;                // rows summed in f32 before adding to f64
constexpr int64_t kParallelThreshold = 1 << 15;  // elements below which one thread runs
// Ahead of oneDNN (see the file comment).
constexpr int kBatchNormPriority = kOneDnnPriority + 5;

enum class BnKind { kTraining, kInference, kGrad };

float load(const float* p, int64_t i) {
  return p[i];
}
float load(const bfloat16* p, int64_t i) {
  return static_cast<float>(p[i]);
}
void store(float* p, int64_t i, float v) {
  p[i] = v;
}
void store(bfloat16* p, int64_t i, float v) {
  p[i] = bfloat16(v);
}
// v as an X would hold it (the value a later op reads back).
template <typename X>
float rounded(float v) {
  if constexpr (std::is_same_v<X, bfloat16>) {
    return static_cast<float>(bfloat16(v));
  } else {
    return v;
  }
}

// Rows [begin, end) of the thread `t` of `n` threads.
void thread_rows(int64_t m, int t, int n, int64_t* begin, int64_t* end) {
  int64_t per = (m + n - 1) / n;
  *begin = std::min(m, per * t);
  *end = std::min(m, *begin + per);
}

// Per-channel sums over rows [r0, r1) of a [*, c] matrix: add(i, k, t1, t2) adds row i's terms
// for channel k into t1 and t2. f32 within blocks of kRowBlock rows, added into s1, s2 (f64).
// Within a block, kLanes channels at a time over its rows: the partial sums stay in registers
// (summing into arrays in memory row by row was bound by those loads and stores: bf16
// batch_norm_training on [32, 32, 32, 64] 0.84 -> 0.42 ms, its gradient 0.79 -> 0.57 ms).
constexpr int64_t kLanes = 16;

template <typename Add>
[[gnu::always_inline]] inline void channel_sums_body(int64_t r0, int64_t r1, int64_t c, double* s1,
                                                     double* s2, Add add) {
  for (int64_t blk = r0; blk < r1; blk += kRowBlock) {
    const int64_t end = std::min(r1, blk + kRowBlock);
    for (int64_t k0 = 0; k0 < c; k0 += kLanes) {
      const int64_t kn = std::min(kLanes, c - k0);
      float a1[kLanes] = {}, a2[kLanes] = {};
      if (kn == kLanes) {
        for (int64_t i = blk; i < end; ++i) {
#pragma omp simd
          for (int64_t j = 0; j < kLanes; ++j) add(i, k0 + j, a1[j], a2[j]);
        }
      } else {
        for (int64_t i = blk; i < end; ++i) {
          for (int64_t j = 0; j < kn; ++j) add(i, k0 + j, a1[j], a2[j]);
        }
      }
      for (int64_t j = 0; j < kn; ++j) {
        s1[k0 + j] += a1[j];
        s2[k0 + j] += a2[j];
      }
    }
  }
}

// channel_sums_body compiled for x86-64-v3, and for AVX-512 where cpu_runs_v4_variants() (the
// bf16 widening of a batch's rows 16 lanes at a time).
template <typename Add>
void channel_sums_v3(int64_t r0, int64_t r1, int64_t c, double* s1, double* s2, Add add) {
  channel_sums_body(r0, r1, c, s1, s2, add);
}

template <typename Add>
TERN_CPU_V4_LOOP void channel_sums_v4(int64_t r0, int64_t r1, int64_t c, double* s1, double* s2,
                                      Add add) {
  channel_sums_body(r0, r1, c, s1, s2, add);
}

template <typename Add>
void channel_sums(int64_t r0, int64_t r1, int64_t c, double* s1, double* s2, Add add) {
  static const bool v4 = cpu_runs_v4_variants();
  if (v4) {
    channel_sums_v4(r0, r1, c, s1, s2, add);
  } else {
    channel_sums_v3(r0, r1, c, s1, s2, add);
  }
}

// The operands of BatchNormKernel::affine over [*, c] rows.
template <typename X>
struct AffineArgs {
  int64_t c;
  const X* a;
  const float* p;
  const X* b;
  const float* q;
  const float* r;
  X* out;
  const X* gate;
  const X* residual;
};

// Rows [r0, r1) of out[i, k] = a[i, k] * p[k] + (b ? b[i, k] * q[k] : 0) + r[k]; with kGate,
// a[i, k] counts only where gate[i, k] > 0; with kRelu, out is relu'd (NaN kept). The flags are
// template arguments and both loads unconditional (a select): a test of the gate pointer or a
// conditional load inside the loop kept it from vectorizing (the gated gradient ran 10x slower).
template <typename X, bool kGate, bool kRelu, bool kResidual>
[[gnu::always_inline]] inline void affine_rows(const AffineArgs<X>& g, int64_t r0, int64_t r1) {
  const int64_t c = g.c;
  const float *p = g.p, *q = g.q, *r = g.r;
  for (int64_t i = r0; i < r1; ++i) {
    const X* ai = g.a + i * c;
    const X* gi = g.gate + (kGate ? i * c : 0);
    const X* si = g.residual + (kResidual ? i * c : 0);
    X* oi = g.out + i * c;
    if (g.b) {
      const X* bi = g.b + i * c;
#pragma omp simd
      for (int64_t k = 0; k < c; ++k) {
        float v = load(ai, k);
        if constexpr (kGate) v = load(gi, k) > 0.0f ? v : 0.0f;
        v = v * p[k] + load(bi, k) * q[k] + r[k];
        if constexpr (kRelu) v = v < 0.0f ? 0.0f : v;
        store(oi, k, v);
      }
    } else {
#pragma omp simd
      for (int64_t k = 0; k < c; ++k) {
        float v = load(ai, k);
        if constexpr (kGate) v = load(gi, k) > 0.0f ? v : 0.0f;
        v = v * p[k] + r[k];
        // The residual adds to y as stored (rounded to X), as an add after the norm would.
        if constexpr (kResidual) v = rounded<X>(v) + load(si, k);
        if constexpr (kRelu) v = v < 0.0f ? 0.0f : v;
        store(oi, k, v);
      }
    }
  }
}

// affine_rows compiled for x86-64-v3, and for AVX-512 (16 lanes; bf16 rounded 16 at a time). On
// W9's [32, 16, 16, 256] (Zen 5, 2 threads, kernel_ab_bench): bf16 batch_norm_training with
// residual and relu 0.62 -> 0.30 ms; bf16 training + gradient (relu) 1.03 -> 0.61-0.63 ms, f32
// 1.61 -> 1.33-1.38 ms (channel_sums too).
template <typename X, bool kGate, bool kRelu, bool kResidual>
void affine_rows_v3(const AffineArgs<X>& g, int64_t r0, int64_t r1) {
  affine_rows<X, kGate, kRelu, kResidual>(g, r0, r1);
}

template <typename X, bool kGate, bool kRelu, bool kResidual>
TERN_CPU_V4_LOOP void affine_rows_v4(const AffineArgs<X>& g, int64_t r0, int64_t r1) {
  affine_rows<X, kGate, kRelu, kResidual>(g, r0, r1);
}

class BatchNormKernel final : public kernels::Kernel {
 public:
  BatchNormKernel(const kernels::KernelSignature& sig, BnKind kind) : kind_(kind) {
    const TensorType& x = sig.inputs[kind == BnKind::kGrad ? 1 : 0];
    bf16_ = x.dtype == DType::kBF16;
    c_ = x.shape.rank() ? x.shape[x.shape.rank() - 1] : 1;
    m_ = c_ ? x.shape.num_elements() / c_ : 0;
    eps_ = sig.attrs->get_float("epsilon");
    relu_ = kind != BnKind::kInference && sig.attrs->get_string("activation") == "relu";
    threads_ = std::max(1, omp_get_max_threads());
    size_t cs = static_cast<size_t>(c_), t = static_cast<size_t>(threads_);
    sums_.assign(2 * cs * t, 0.0);
    scale_.assign(cs, 0.0f);
    shift_.assign(cs, 0.0f);
    bias_.assign(cs, 0.0f);
  }

  void run(KernelContext& ctx) override {
    if (kind_ == BnKind::kTraining) {
      bf16_ ? training<bfloat16>(ctx) : training<float>(ctx);
    } else if (kind_ == BnKind::kInference) {
      inference(ctx);
    } else {
      if (relu_) {
        bf16_ ? grad<bfloat16, true>(ctx) : grad<float, true>(ctx);
      } else {
        bf16_ ? grad<bfloat16, false>(ctx) : grad<float, false>(ctx);
      }
    }
  }

 private:
  int nthreads() const {
    return m_ * c_ >= kParallelThreshold && !omp_in_parallel() ? threads_ : 1;
  }

  // Runs sums(t, s1, s2) on each thread, then adds the threads' s1, s2 into tot1, tot2.
  template <typename Sums>
  void reduce(int n, Sums sums, std::vector<double>& tot1, std::vector<double>& tot2) {
    std::fill(sums_.begin(), sums_.end(), 0.0);
#pragma omp parallel for num_threads(n) schedule(static, 1) if (n > 1)
    for (int t = 0; t < n; ++t) {
      size_t o = 2 * static_cast<size_t>(c_) * static_cast<size_t>(t);
      sums(t, &sums_[o], &sums_[o + static_cast<size_t>(c_)]);
    }
    tot1.assign(static_cast<size_t>(c_), 0.0);
    tot2.assign(static_cast<size_t>(c_), 0.0);
    for (int t = 0; t < n; ++t) {
      size_t o = 2 * static_cast<size_t>(c_) * static_cast<size_t>(t);
      for (int64_t k = 0; k < c_; ++k) {
        tot1[static_cast<size_t>(k)] += sums_[o + static_cast<size_t>(k)];
        tot2[static_cast<size_t>(k)] += sums_[o + static_cast<size_t>(c_ + k)];
      }
    }
  }

  // out[i, k] = a[i, k] * p[k] + (b ? b[i, k] * q[k] : 0) + r[k] over all rows (affine_rows).
  template <typename X, bool kGate = false, bool kRelu = false, bool kResidual = false>
  void affine(int n, const X* a, const float* p, const X* b, const float* q, const float* r, X* out,
              const X* gate = nullptr, const X* residual = nullptr) const {
    const AffineArgs<X> args{c_, a, p, b, q, r, out, gate, residual};
    static const bool v4 = cpu_runs_v4_variants();
#pragma omp parallel for num_threads(n) schedule(static, 1) if (n > 1)
    for (int t = 0; t < n; ++t) {
      int64_t r0, r1;
      thread_rows(m_, t, n, &r0, &r1);
      if (v4) {
        affine_rows_v4<X, kGate, kRelu, kResidual>(args, r0, r1);
      } else {
        affine_rows_v3<X, kGate, kRelu, kResidual>(args, r0, r1);
      }
    }
  }

  template <typename X>
  void training(KernelContext& ctx) {
    const X* x = ctx.inputs[0].data<X>();
    const float* gamma = ctx.inputs[1].data<float>();
    const float* beta = ctx.inputs[2].data<float>();
    float* mean_out = ctx.outputs[1].data<float>();
    float* var_out = ctx.outputs[2].data<float>();
    const int64_t c = c_;
    const int n = nthreads();
    if (m_ > 0) {
      for (int64_t k = 0; k < c; ++k) shift_[static_cast<size_t>(k)] = load(x, k);
    }
    const float* sh = shift_.data();
    reduce(
        n,
        [&](int t, double* s1, double* s2) {
          int64_t r0, r1;
          thread_rows(m_, t, n, &r0, &r1);
          channel_sums(r0, r1, c, s1, s2, [&](int64_t i, int64_t k, float& t1, float& t2) {
            float d = load(x, i * c + k) - sh[k];
            t1 += d;
            t2 += d * d;
          });
        },
        tot1_, tot2_);
    const double inv_m = m_ ? 1.0 / static_cast<double>(m_) : 0.0;
    for (int64_t k = 0; k < c; ++k) {
      size_t ks = static_cast<size_t>(k);
      double dm = tot1_[ks] * inv_m;
      double var = m_ ? std::max(0.0, tot2_[ks] * inv_m - dm * dm) : 0.0;
      double mean = m_ ? dm + shift_[ks] : 0.0;
      double rstd = 1.0 / std::sqrt(var + eps_);
      mean_out[k] = static_cast<float>(mean);
      var_out[k] = static_cast<float>(var);
      scale_[ks] = static_cast<float>(gamma[k] * rstd);
      bias_[ks] = static_cast<float>(beta[k] - mean * gamma[k] * rstd);
    }
    X* y = ctx.outputs[0].data<X>();
    const X* res = ctx.inputs.size() > 3 ? ctx.inputs[3].data<X>() : nullptr;
    const float *sc = scale_.data(), *bi = bias_.data();
    if (res) {
      if (relu_) {
        affine<X, false, true, true>(n, x, sc, nullptr, nullptr, bi, y, nullptr, res);
      } else {
        affine<X, false, false, true>(n, x, sc, nullptr, nullptr, bi, y, nullptr, res);
      }
    } else if (relu_) {
      affine<X, false, true>(n, x, sc, nullptr, nullptr, bi, y);
    } else {
      affine<X>(n, x, sc, nullptr, nullptr, bi, y);
    }
  }

  void inference(KernelContext& ctx) {
    const float* gamma = ctx.inputs[1].data<float>();
    const float* beta = ctx.inputs[2].data<float>();
    const float* mean = ctx.inputs[3].data<float>();
    const float* var = ctx.inputs[4].data<float>();
    for (int64_t k = 0; k < c_; ++k) {
      double rstd = 1.0 / std::sqrt(static_cast<double>(var[k]) + eps_);
      scale_[static_cast<size_t>(k)] = static_cast<float>(gamma[k] * rstd);
      bias_[static_cast<size_t>(k)] = static_cast<float>(beta[k] - mean[k] * gamma[k] * rstd);
    }
    affine<float>(nthreads(), ctx.inputs[0].data<float>(), scale_.data(), nullptr, nullptr,
                  bias_.data(), ctx.outputs[0].data<float>());
  }

  // dx = gamma * rstd * (dy - mean(dy) - xhat * mean(dy * xhat)) = a * dy + b * x + c; with the
  // folded relu (kGate), dy counts only where the forward's output y (input 5) is > 0.
  template <typename X, bool kGate>
  void grad(KernelContext& ctx) {
    const X* dy = ctx.inputs[0].data<X>();
    const X* x = ctx.inputs[1].data<X>();
    const float* gamma = ctx.inputs[2].data<float>();
    const float* mean = ctx.inputs[3].data<float>();
    const float* var = ctx.inputs[4].data<float>();
    float* dgamma = ctx.outputs[1].data<float>();
    float* dbeta = ctx.outputs[2].data<float>();
    const X* y = kGate ? ctx.inputs[5].data<X>() : nullptr;
    const int64_t c = c_;
    const int n = nthreads();
    reduce(
        n,
        [&](int t, double* s1, double* s2) {
          int64_t r0, r1;
          thread_rows(m_, t, n, &r0, &r1);
          channel_sums(r0, r1, c, s1, s2, [&](int64_t i, int64_t k, float& t1, float& t2) {
            float g = load(dy, i * c + k);
            if constexpr (kGate) {
              const float gate = load(y, i * c + k);
              g = gate > 0.0f ? g : 0.0f;
            }
            t1 += g;
            t2 += g * (load(x, i * c + k) - mean[k]);
          });
        },
        tot1_, tot2_);
    const double inv_m = m_ ? 1.0 / static_cast<double>(m_) : 0.0;
    for (int64_t k = 0; k < c; ++k) {
      size_t ks = static_cast<size_t>(k);
      double rstd = 1.0 / std::sqrt(static_cast<double>(var[k]) + eps_);
      double sum_dy = tot1_[ks], sum_dy_xhat = tot2_[ks] * rstd;
      double a = gamma[k] * rstd;
      double b = -a * rstd * sum_dy_xhat * inv_m;
      dgamma[k] = static_cast<float>(sum_dy_xhat);
      dbeta[k] = static_cast<float>(sum_dy);
      scale_[ks] = static_cast<float>(a);
      shift_[ks] = static_cast<float>(b);
      bias_[ks] = static_cast<float>(-a * sum_dy * inv_m - b * mean[k]);
    }
    affine<X, kGate>(n, dy, scale_.data(), x, shift_.data(), bias_.data(), ctx.outputs[0].data<X>(),
                     y);
  }

  BnKind kind_;
  bool bf16_ = false;  // the mixed form: bf16 x, dy, y, dx; f32 parameters and statistics
  bool relu_ = false;  // activation = "relu" folded in
  int64_t c_ = 0, m_ = 0;
  double eps_ = 0;
  int threads_ = 1;
  std::vector<double> sums_;  // [threads][2][C] f64 per-thread sums
  std::vector<double> tot1_, tot2_;
  std::vector<float> scale_, shift_, bias_;
};

}  // namespace

void register_batch_norm_kernels(kernels::KernelRegistry& r) {
  const std::pair<const char*, BnKind> ops[] = {{"batch_norm_training", BnKind::kTraining},
                                                {"batch_norm_inference", BnKind::kInference},
                                                {"batch_norm_grad", BnKind::kGrad}};
  for (const auto& [op, kind] : ops) {
    kernels::KernelCandidate c;
    c.name = "cpu_vec";
    // Inference is f32 only here (bf16 inference goes to oneDNN): claim only what runs.
    c.dtypes = kind == BnKind::kInference ? std::vector<DType>{DType::kF32}
                                          : std::vector<DType>{DType::kF32, DType::kBF16};
    c.priority = kBatchNormPriority;
    c.decline = [kind](const kernels::KernelSignature& sig) -> std::string {
      const DType x = sig.inputs[kind == BnKind::kGrad ? 1 : 0].dtype;
      if (x != DType::kBF16) return "";
      const DType gamma = sig.inputs[kind == BnKind::kGrad ? 2 : 1].dtype;
      if (gamma != DType::kF32) {
        return str_cat("bf16 x with ", dtype_name(gamma),
                       " gamma/statistics: only the mixed form (f32 gamma/statistics) here");
      }
      return "";
    };
    c.create = [kind](const kernels::KernelSignature& sig) -> std::unique_ptr<kernels::Kernel> {
      return std::make_unique<BatchNormKernel>(sig, kind);
    };
    r.add(op, std::move(c));
  }
}

}  // namespace tern::cpu

TERN_CPU_V3_END
