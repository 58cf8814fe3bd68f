// Fused optimizer updates on the CPU (sgd_update, adam_update, adamw_update, rmsprop_update): one
// pass over all parameters, split into fixed-size chunks planned once per node, chunks spread over
// OpenMP threads, and `omp simd` inner loops in the parameter dtype. Formulas and input layout:
// tern/ops/optimizer_ops.cc. Every element is updated independently, so results do not depend on
// the thread count (deterministic). A parameter's 16-bit copy (attribute copies) is cast from each
// chunk right after its update, while the chunk is still in L2, so the step's bf16 convolutions
// and matmuls need no pass over the f32 weights (plain stores: streaming ones made this node 1.5
// ms faster per ResNet-50 step but the next forward, reading the copies from memory, as much
// slower). With has_apply and apply = false a run writes nothing.
#include <algorithm>
#include <cmath>
#include <memory>

#include <immintrin.h>

#include "tern/backends/cpu/cpu_isa.h"
#include "tern/backends/cpu/cpu_kernels.h"
#include "tern/backends/cpu/elementwise_loops.h"
#include "tern/ops/optimizer_layout.h"

TERN_CPU_V3_BEGIN  // the code below is x86-64-v3 (cpu_isa.h)

namespace tern::cpu {
namespace {

constexpr int64_t kChunkElements = 16384;      // per task: fits L2 with all slots streamed
constexpr int64_t kParallelThreshold = 65536;  // below this, threads cost more than they save

// --- per-chunk loops (restrict pointers, no branches inside) ---

template <typename T>
struct Sgd {
  T lr, momentum, wd;
  bool nesterov;
  void run(T* __restrict p, const T* __restrict g, T* __restrict vel, int64_t n) const {
    if (!vel) {
#pragma omp simd
      for (int64_t e = 0; e < n; ++e) p[e] -= lr * (g[e] + wd * p[e]);
      return;
    }
    if (nesterov) {
#pragma omp simd
      for (int64_t e = 0; e < n; ++e) {
        T ge = g[e] + wd * p[e];
        T v = momentum * vel[e] - lr * ge;
        vel[e] = v;
        p[e] += momentum * v - lr * ge;
      }
      return;
    }
#pragma omp simd
    for (int64_t e = 0; e < n; ++e) {
      T v = momentum * vel[e] - lr * (g[e] + wd * p[e]);
      vel[e] = v;
      p[e] += v;
    }
  }
};

// Square roots in place. GCC keeps a libm call for negative inputs under the default
// -fmath-errno, which blocks vectorizing any loop that calls std::sqrt; so the loops below write
// their radicands to a small block and take the roots here with AVX.
inline void sqrt_inplace(float* x, int64_t n) {
  int64_t e = 0;
  for (; e + 8 <= n; e += 8) _mm256_storeu_ps(x + e, _mm256_sqrt_ps(_mm256_loadu_ps(x + e)));
  for (; e < n; ++e) x[e] = std::sqrt(x[e]);
}

inline void sqrt_inplace(double* x, int64_t n) {
  int64_t e = 0;
  for (; e + 4 <= n; e += 4) _mm256_storeu_pd(x + e, _mm256_sqrt_pd(_mm256_loadu_pd(x + e)));
  for (; e < n; ++e) x[e] = std::sqrt(x[e]);
}

constexpr int64_t kBlock = 256;  // radicand block (stays in L1)

template <typename T>
struct Adam {
  T alpha, one_minus_b1, one_minus_b2, eps, decay;  // decay = 1 - lr * weight_decay (adamw)
  void run(T* __restrict p, const T* __restrict g, T* __restrict m, T* __restrict v,
           T* __restrict vhat, int64_t n) const {
    T den[kBlock];
    for (int64_t b = 0; b < n; b += kBlock) {
      const int64_t len = std::min(kBlock, n - b);
      T* __restrict pb = p + b;
      T* __restrict mb = m + b;
      T* __restrict vb = v + b;
      const T* __restrict gb = g + b;
#pragma omp simd
      for (int64_t e = 0; e < len; ++e) {
        T ge = gb[e];
        mb[e] += (ge - mb[e]) * one_minus_b1;
        vb[e] += (ge * ge - vb[e]) * one_minus_b2;
        den[e] = vb[e];
      }
      if (vhat) {
        T* __restrict hb = vhat + b;
#pragma omp simd
        for (int64_t e = 0; e < len; ++e) {
          hb[e] = hb[e] > den[e] ? hb[e] : den[e];
          den[e] = hb[e];
        }
      }
      sqrt_inplace(den, len);
#pragma omp simd
      for (int64_t e = 0; e < len; ++e) pb[e] = pb[e] * decay - alpha * mb[e] / (den[e] + eps);
    }
  }
};

template <typename T>
struct RmsProp {
  T lr, rho, one_minus_rho, momentum, eps;
  void run(T* __restrict p, const T* __restrict g, T* __restrict rms, T* __restrict mom,
           T* __restrict mg, int64_t n) const {
    T den[kBlock];
    for (int64_t b = 0; b < n; b += kBlock) {
      const int64_t len = std::min(kBlock, n - b);
      T* __restrict rb = rms + b;
      const T* __restrict gb = g + b;
#pragma omp simd
      for (int64_t e = 0; e < len; ++e) {
        rb[e] = rho * rb[e] + one_minus_rho * gb[e] * gb[e];
        den[e] = rb[e] + eps;
      }
      if (mg) {
        T* __restrict ab = mg + b;
#pragma omp simd
        for (int64_t e = 0; e < len; ++e) {
          ab[e] = rho * ab[e] + one_minus_rho * gb[e];
          den[e] = rb[e] - ab[e] * ab[e] + eps;
        }
      }
      sqrt_inplace(den, len);
      T* __restrict pb = p + b;
      if (mom) {
        T* __restrict ob = mom + b;
#pragma omp simd
        for (int64_t e = 0; e < len; ++e) {
          ob[e] = momentum * ob[e] + lr * gb[e] / den[e];
          pb[e] -= ob[e];
        }
      } else {
#pragma omp simd
        for (int64_t e = 0; e < len; ++e) pb[e] -= lr * gb[e] / den[e];
      }
    }
  }
};

// --- the kernel: chunks planned from the static shapes, run in parallel ---

struct Chunk {
  int param;
  int64_t begin;
  int64_t size;
};

// Everything but lr, step and apply is fixed per node, so attributes and slot positions are read
// once here and a run only reads those scalars and walks the chunks.
class OptimizerUpdateKernel final : public kernels::Kernel {
 public:
  explicit OptimizerUpdateKernel(const kernels::KernelSignature& sig)
      : op_(sig.op->name), layout_(ops::optimizer_layout(op_, *sig.attrs)) {
    const ops::Attrs& a = *sig.attrs;
    auto attr = [&](std::string_view name) { return a.has(name) ? a.get_float(name) : 0.0; };
    kind_ = op_ == "sgd_update"       ? Kind::kSgd
            : op_ == "rmsprop_update" ? Kind::kRmsProp
                                      : Kind::kAdam;
    momentum_ = attr("momentum");
    weight_decay_ = attr("weight_decay");
    nesterov_ = a.has("nesterov") && a.get_bool("nesterov");
    beta1_ = attr("beta1");
    beta2_ = attr("beta2");
    rho_ = attr("rho");
    epsilon_ = attr("epsilon");
    slot_vhat_ = layout_.slot_index("vhat");
    slot_mom_ =
        kind_ == Kind::kSgd ? layout_.slot_index("velocity") : layout_.slot_index("momentum");
    slot_mg_ = layout_.slot_index("mg");
    copy_input_.assign(static_cast<size_t>(layout_.num_params), -1);
    for (int j = 0; j < layout_.num_copies(); ++j) {
      copy_input_[static_cast<size_t>(layout_.copies[static_cast<size_t>(j)])] = layout_.copy(j);
    }
    for (int i = 0; i < layout_.num_params; ++i) {
      int64_t n = sig.inputs[static_cast<size_t>(layout_.param(i))].shape.num_elements();
      for (int64_t b = 0; b < n; b += kChunkElements) {
        chunks_.push_back({i, b, std::min(kChunkElements, n - b)});
      }
      total_ += n;
    }
  }

  void run(kernels::KernelContext& ctx) override {
    if (layout_.has_apply && ctx.inputs[static_cast<size_t>(layout_.apply())].get(0) == 0.0) return;
    DType d = ctx.inputs[static_cast<size_t>(layout_.param(0))].dtype();
    if (d == DType::kF32) return run_typed<float>(ctx);
    if (d == DType::kF64) return run_typed<double>(ctx);
    throw_error(ErrorCode::kInvalidArgument, op_, ": parameters must be f32 or f64, got ",
                dtype_name(d));
  }

 private:
  enum class Kind { kSgd, kAdam, kRmsProp };

  // Element pointer of input `index` at `offset` (nullptr for index < 0); inputs that are updated
  // share storage with the variables, so an alias handle yields the writable pointer.
  template <typename T>
  static T* at(kernels::KernelContext& ctx, int index, int64_t offset) {
    if (index < 0) return nullptr;
    Tensor alias = ctx.inputs[static_cast<size_t>(index)];
    return alias.data<T>() + offset;
  }
  // Input index of parameter i's entry in slot list s, or -1 if the list is absent.
  int slot(int s, int i) const { return s < 0 ? -1 : layout_.slot(s, i); }

  // Runs `fn` (the update) on every chunk, then casts the chunk into its parameter's copy.
  template <typename T, typename Fn>
  void for_each_chunk(kernels::KernelContext& ctx, Fn&& fn) const {
    const int64_t count = static_cast<int64_t>(chunks_.size());
#pragma omp parallel for schedule(static) if (total_ >= kParallelThreshold)
    for (int64_t c = 0; c < count; ++c) {
      const Chunk& chunk = chunks_[static_cast<size_t>(c)];
      fn(chunk);
      write_copy<T>(ctx, chunk);
    }
  }

  template <typename T>
  void write_copy(kernels::KernelContext& ctx, const Chunk& c) const {
    if constexpr (std::is_same_v<T, float>) {
      int index = copy_input_[static_cast<size_t>(c.param)];
      if (index < 0) return;
      const float* p = at<float>(ctx, layout_.param(c.param), c.begin);
      Tensor copy = ctx.inputs[static_cast<size_t>(index)];
      if (copy.dtype() == DType::kBF16) {
        from_float(p, copy.data<bfloat16>() + c.begin, c.size);
      } else if (copy.dtype() == DType::kF16) {
        from_float(p, copy.data<float16>() + c.begin, c.size);
      } else {  // f32: rounded to bf16 (the bf16 copy widened)
        float* out = copy.data<float>() + c.begin;
#pragma omp simd
        for (int64_t i = 0; i < c.size; ++i) {
          out[i] = bfloat16::round(p[i]);
        }
      }
    }
  }

  template <typename T>
  void run_typed(kernels::KernelContext& ctx) const {
    const double lr = ctx.inputs[0].get(0);
    const ops::OptimizerLayout& l = layout_;
    if (kind_ == Kind::kSgd) {
      Sgd<T> u{static_cast<T>(lr), static_cast<T>(momentum_), static_cast<T>(weight_decay_),
               nesterov_};
      for_each_chunk<T>(ctx, [&](const Chunk& c) {
        u.run(at<T>(ctx, l.param(c.param), c.begin), at<T>(ctx, l.grad(c.param), c.begin),
              at<T>(ctx, slot(slot_mom_, c.param), c.begin), c.size);
      });
    } else if (kind_ == Kind::kRmsProp) {
      RmsProp<T> u{static_cast<T>(lr), static_cast<T>(rho_), static_cast<T>(1.0 - rho_),
                   static_cast<T>(momentum_), static_cast<T>(epsilon_)};
      for_each_chunk<T>(ctx, [&](const Chunk& c) {
        u.run(at<T>(ctx, l.param(c.param), c.begin), at<T>(ctx, l.grad(c.param), c.begin),
              at<T>(ctx, l.slot(0, c.param), c.begin),
              at<T>(ctx, slot(slot_mom_, c.param), c.begin),
              at<T>(ctx, slot(slot_mg_, c.param), c.begin), c.size);
      });
    } else {
      double t = ctx.inputs[1].get(0);
      if (!(t >= 1.0)) {
        throw_error(ErrorCode::kInvalidArgument, op_, ": step must be >= 1, got ", t);
      }
      double alpha = lr * std::sqrt(1.0 - std::pow(beta2_, t)) / (1.0 - std::pow(beta1_, t));
      Adam<T> u{static_cast<T>(alpha), static_cast<T>(1.0 - beta1_), static_cast<T>(1.0 - beta2_),
                static_cast<T>(epsilon_), static_cast<T>(1.0 - lr * weight_decay_)};
      for_each_chunk<T>(ctx, [&](const Chunk& c) {
        u.run(at<T>(ctx, l.param(c.param), c.begin), at<T>(ctx, l.grad(c.param), c.begin),
              at<T>(ctx, l.slot(0, c.param), c.begin), at<T>(ctx, l.slot(1, c.param), c.begin),
              at<T>(ctx, slot(slot_vhat_, c.param), c.begin), c.size);
      });
    }
  }

  std::string op_;
  ops::OptimizerLayout layout_;
  Kind kind_ = Kind::kSgd;
  double momentum_ = 0, weight_decay_ = 0, beta1_ = 0, beta2_ = 0, rho_ = 0, epsilon_ = 0;
  bool nesterov_ = false;
  int slot_vhat_ = -1, slot_mom_ = -1, slot_mg_ = -1;
  std::vector<int> copy_input_;  // per parameter: input index of its copy, or -1
  std::vector<Chunk> chunks_;    // fixed-size pieces of every parameter, in parameter order
  int64_t total_ = 0;            // elements over all parameters
};

}  // namespace

void register_optimizer_kernels(kernels::KernelRegistry& r) {
  for (std::string_view op : {"sgd_update", "adam_update", "adamw_update", "rmsprop_update"}) {
    r.add(op,
          {.name = "cpu_vec",
           .dtypes = {DType::kF32, DType::kF64},
           .priority = kVectorPriority,
           .deterministic = true,
           .create = [](const kernels::KernelSignature& sig) -> std::unique_ptr<kernels::Kernel> {
             return std::make_unique<OptimizerUpdateKernel>(sig);
           }});
  }
}

}  // namespace tern::cpu

TERN_CPU_V3_END
