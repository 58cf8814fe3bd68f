// Reference kernels for batch norm (x viewed as [M, C], statistics per channel) and layer norm
// (x viewed as [R, D], statistics per row), forward and backward. Statistics accumulate in double
// with two passes (mean, then squared deviations). batch_norm_training and batch_norm_grad also
// run the mixed form: 16-bit x and dy (type T) with f32 gamma, beta and statistics (type P), and
// the folded relu (activation = "relu"): relu of the stored y; dy where the given y > 0; and the
// training form's residual, added to the stored y before the relu.
#include <cmath>
#include <vector>

#include "tern/kernels/ref/ref.h"
#include "tern/ops/infer.h"

namespace tern::kernels::ref {
namespace {

template <typename T>
double load(const T* p, int64_t i) {
  return static_cast<double>(static_cast<compute_t<T>>(p[i]));
}
template <typename T>
void store(T* p, int64_t i, double v) {
  p[i] = static_cast<T>(static_cast<compute_t<T>>(v));
}

int64_t last_dim(const Tensor& t) {
  return t.shape()[t.rank() - 1];
}

bool folded_relu(const KernelContext& ctx) {
  return ctx.attrs.get_string("activation") == "relu";
}

// --- batch norm ---

// True for the mixed form: input `param` (gamma) is f32 while input `x` is not.
bool mixed_params(const KernelContext& ctx, size_t x, size_t param) {
  return ctx.inputs[param].dtype() == DType::kF32 && ctx.inputs[x].dtype() != DType::kF32;
}

template <typename T, typename P>
void batch_norm_training_ref(KernelContext& ctx) {
  const Tensor& xt = ctx.inputs[0];
  const T* x = xt.data<T>();
  const P* gamma = ctx.inputs[1].data<P>();
  const P* beta = ctx.inputs[2].data<P>();
  T* y = ctx.outputs[0].data<T>();
  P* mean_out = ctx.outputs[1].data<P>();
  P* var_out = ctx.outputs[2].data<P>();
  const double eps = ctx.attrs.get_float("epsilon");
  const bool relu = folded_relu(ctx);
  const T* residual = ctx.inputs.size() > 3 ? ctx.inputs[3].data<T>() : nullptr;
  const int64_t c = last_dim(xt), m = c ? xt.num_elements() / c : 0;
  std::vector<double> mean(static_cast<size_t>(c), 0.0), var(static_cast<size_t>(c), 0.0);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t k = 0; k < c; ++k) mean[static_cast<size_t>(k)] += load(x, i * c + k);
  }
  for (auto& v : mean) v = m ? v / static_cast<double>(m) : 0.0;
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t k = 0; k < c; ++k) {
      double d = load(x, i * c + k) - mean[static_cast<size_t>(k)];
      var[static_cast<size_t>(k)] += d * d;
    }
  }
  for (auto& v : var) v = m ? v / static_cast<double>(m) : 0.0;
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t k = 0; k < c; ++k) {
      size_t ks = static_cast<size_t>(k);
      double xhat = (load(x, i * c + k) - mean[ks]) / std::sqrt(var[ks] + eps);
      store(y, i * c + k, xhat * load(gamma, k) + load(beta, k));
      // The residual added to the stored value, as an add op after it would see it.
      if (residual) store(y, i * c + k, load(y, i * c + k) + load(residual, i * c + k));
      // relu of the stored value, as a relu op after it would see it (NaN stays NaN).
      if (relu && load(y, i * c + k) < 0) store(y, i * c + k, 0.0);
    }
  }
  for (int64_t k = 0; k < c; ++k) {
    store(mean_out, k, mean[static_cast<size_t>(k)]);
    store(var_out, k, var[static_cast<size_t>(k)]);
  }
}

template <typename T>
void batch_norm_inference_ref(KernelContext& ctx) {
  const Tensor& xt = ctx.inputs[0];
  const T* x = xt.data<T>();
  const T* gamma = ctx.inputs[1].data<T>();
  const T* beta = ctx.inputs[2].data<T>();
  const T* mean = ctx.inputs[3].data<T>();
  const T* var = ctx.inputs[4].data<T>();
  T* y = ctx.outputs[0].data<T>();
  const double eps = ctx.attrs.get_float("epsilon");
  const int64_t c = last_dim(xt);
  for (int64_t e = 0; e < xt.num_elements(); ++e) {
    int64_t k = e % c;
    double xhat = (load(x, e) - load(mean, k)) / std::sqrt(load(var, k) + eps);
    store(y, e, xhat * load(gamma, k) + load(beta, k));
  }
}

// dx = gamma * rstd * (dy - mean(dy) - xhat * mean(dy * xhat)), means over the batch axes.
template <typename T, typename P>
void batch_norm_grad_ref(KernelContext& ctx) {
  const T* dy = ctx.inputs[0].data<T>();
  const Tensor& xt = ctx.inputs[1];
  const T* x = xt.data<T>();
  const P* gamma = ctx.inputs[2].data<P>();
  const P* mean = ctx.inputs[3].data<P>();
  const P* var = ctx.inputs[4].data<P>();
  T* dx = ctx.outputs[0].data<T>();
  P* dgamma = ctx.outputs[1].data<P>();
  P* dbeta = ctx.outputs[2].data<P>();
  const double eps = ctx.attrs.get_float("epsilon");
  // The folded relu: dy where the forward's (relu'd) output y > 0, else 0.
  const T* y = folded_relu(ctx) ? ctx.inputs[5].data<T>() : nullptr;
  auto grad_at = [&](int64_t e) { return y && !(load(y, e) > 0) ? 0.0 : load(dy, e); };
  const int64_t c = last_dim(xt), m = c ? xt.num_elements() / c : 0;
  std::vector<double> rstd(static_cast<size_t>(c)), sum_dy(static_cast<size_t>(c), 0.0),
      sum_dy_xhat(static_cast<size_t>(c), 0.0);
  for (int64_t k = 0; k < c; ++k)
    rstd[static_cast<size_t>(k)] = 1.0 / std::sqrt(load(var, k) + eps);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t k = 0; k < c; ++k) {
      size_t ks = static_cast<size_t>(k);
      double g = grad_at(i * c + k);
      sum_dy[ks] += g;
      sum_dy_xhat[ks] += g * (load(x, i * c + k) - load(mean, k)) * rstd[ks];
    }
  }
  const double inv_m = m ? 1.0 / static_cast<double>(m) : 0.0;
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t k = 0; k < c; ++k) {
      size_t ks = static_cast<size_t>(k);
      double xhat = (load(x, i * c + k) - load(mean, k)) * rstd[ks];
      double v = grad_at(i * c + k) - sum_dy[ks] * inv_m - xhat * sum_dy_xhat[ks] * inv_m;
      store(dx, i * c + k, load(gamma, k) * rstd[ks] * v);
    }
  }
  for (int64_t k = 0; k < c; ++k) {
    store(dgamma, k, sum_dy_xhat[static_cast<size_t>(k)]);
    store(dbeta, k, sum_dy[static_cast<size_t>(k)]);
  }
}

// --- layer norm ---

template <typename T>
void layer_norm_ref(KernelContext& ctx) {
  const Tensor& xt = ctx.inputs[0];
  const T* x = xt.data<T>();
  const T* gamma = ctx.inputs[1].data<T>();
  const T* beta = ctx.inputs[2].data<T>();
  T* y = ctx.outputs[0].data<T>();
  T* mean_out = ctx.outputs[1].data<T>();
  T* rstd_out = ctx.outputs[2].data<T>();
  const double eps = ctx.attrs.get_float("epsilon");
  const int64_t d = last_dim(xt), rows = d ? xt.num_elements() / d : ctx.outputs[1].num_elements();
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t base = r * d;
    double mean = 0, var = 0;
    for (int64_t j = 0; j < d; ++j) mean += load(x, base + j);
    mean = d ? mean / static_cast<double>(d) : 0.0;
    for (int64_t j = 0; j < d; ++j) var += (load(x, base + j) - mean) * (load(x, base + j) - mean);
    var = d ? var / static_cast<double>(d) : 0.0;
    double rstd = 1.0 / std::sqrt(var + eps);
    for (int64_t j = 0; j < d; ++j) {
      store(y, base + j, (load(x, base + j) - mean) * rstd * load(gamma, j) + load(beta, j));
    }
    store(mean_out, r, mean);
    store(rstd_out, r, rstd);
  }
}

// dx = rstd * (g - mean(g) - xhat * mean(g * xhat)) with g = dy * gamma, means over the row.
template <typename T>
void layer_norm_grad_ref(KernelContext& ctx) {
  const T* dy = ctx.inputs[0].data<T>();
  const Tensor& xt = ctx.inputs[1];
  const T* x = xt.data<T>();
  const T* gamma = ctx.inputs[2].data<T>();
  const T* mean = ctx.inputs[3].data<T>();
  const T* rstd = ctx.inputs[4].data<T>();
  T* dx = ctx.outputs[0].data<T>();
  T* dgamma = ctx.outputs[1].data<T>();
  T* dbeta = ctx.outputs[2].data<T>();
  const int64_t d = last_dim(xt), rows = d ? xt.num_elements() / d : 0;
  std::vector<double> sum_dgamma(static_cast<size_t>(d), 0.0),
      sum_dbeta(static_cast<size_t>(d), 0.0);
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t base = r * d;
    const double mu = load(mean, r), rs = load(rstd, r);
    double mean_g = 0, mean_gx = 0;
    for (int64_t j = 0; j < d; ++j) {
      double g = load(dy, base + j) * load(gamma, j);
      double xhat = (load(x, base + j) - mu) * rs;
      mean_g += g;
      mean_gx += g * xhat;
      sum_dgamma[static_cast<size_t>(j)] += load(dy, base + j) * xhat;
      sum_dbeta[static_cast<size_t>(j)] += load(dy, base + j);
    }
    mean_g /= static_cast<double>(d);
    mean_gx /= static_cast<double>(d);
    for (int64_t j = 0; j < d; ++j) {
      double g = load(dy, base + j) * load(gamma, j);
      double xhat = (load(x, base + j) - mu) * rs;
      store(dx, base + j, rs * (g - mean_g - xhat * mean_gx));
    }
  }
  for (int64_t j = 0; j < d; ++j) {
    store(dgamma, j, sum_dgamma[static_cast<size_t>(j)]);
    store(dbeta, j, sum_dbeta[static_cast<size_t>(j)]);
  }
}

}  // namespace

void register_norm_ref(KernelRegistry& r) {
  const auto& f = ops::kFloatDTypes;
  add_ref(r, "batch_norm_training", f, [](KernelContext& ctx) {
    dispatch_float(ctx.inputs[0].dtype(), "batch_norm_training", [&](auto tag) {
      using T = decltype(tag);
      if (mixed_params(ctx, 0, 1)) {
        batch_norm_training_ref<T, float>(ctx);
      } else {
        batch_norm_training_ref<T, T>(ctx);
      }
    });
  });
  add_ref(r, "batch_norm_inference", f, [](KernelContext& ctx) {
    dispatch_float(ctx.inputs[0].dtype(), "batch_norm_inference",
                   [&](auto tag) { batch_norm_inference_ref<decltype(tag)>(ctx); });
  });
  add_ref(r, "batch_norm_grad", f, [](KernelContext& ctx) {
    dispatch_float(ctx.inputs[0].dtype(), "batch_norm_grad", [&](auto tag) {
      using T = decltype(tag);
      if (mixed_params(ctx, 1, 2)) {
        batch_norm_grad_ref<T, float>(ctx);
      } else {
        batch_norm_grad_ref<T, T>(ctx);
      }
    });
  });
  add_ref(r, "layer_norm", f, [](KernelContext& ctx) {
    dispatch_float(ctx.inputs[0].dtype(), "layer_norm",
                   [&](auto tag) { layer_norm_ref<decltype(tag)>(ctx); });
  });
  add_ref(r, "layer_norm_grad", f, [](KernelContext& ctx) {
    dispatch_float(ctx.inputs[0].dtype(), "layer_norm_grad",
                   [&](auto tag) { layer_norm_grad_ref<decltype(tag)>(ctx); });
  });
}

}  // namespace tern::kernels::ref
