// Reference kernels for attention and attention_grad (tern/ops/attention_ops.cc): plain loops over
// (batch, head, query row), every dot product and softmax sum in double. The dropout mask is drawn
// as dropout_ref draws it, over the [B, H, T, S] element index.
#include <algorithm>
#include <cmath>
#include <vector>

#include "tern/base/philox.h"
#include "tern/kernels/ref/ref.h"
#include "tern/ops/attention_geometry.h"
#include "tern/ops/infer.h"

namespace tern::kernels::ref {
namespace {

// The node's geometry and its optional bool mask input `mask_input`; q is input `first`.
struct Geometry : ops::AttentionGeometry {
  const bool* mask = nullptr;  // [B, T, S], or null

  Geometry(const KernelContext& ctx, size_t first, size_t mask_input)
      : AttentionGeometry(ctx.inputs[first].shape(), ctx.inputs[first + 2].shape(), ctx.attrs) {
    if (ctx.inputs.size() > mask_input) mask = ctx.inputs[mask_input].data<bool>();
  }
  // Whether query row i may attend to key j of batch n.
  bool allowed(int64_t n, int64_t i, int64_t j) const {
    if (causal && j > i) return false;
    return mask == nullptr || mask[(n * t + i) * s + j];
  }
};

template <typename T>
double load(const T* p, int64_t i) {
  return static_cast<double>(static_cast<compute_t<T>>(p[i]));
}

template <typename T>
void attention_ref(KernelContext& ctx) {
  const Geometry g(ctx, 0, 4);
  const T *q = ctx.inputs[0].data<T>(), *k = ctx.inputs[1].data<T>(), *v = ctx.inputs[2].data<T>();
  const uint64_t offset = static_cast<uint64_t>(ctx.inputs[3].data<int64_t>()[0]);
  const Philox rng(static_cast<uint64_t>(ctx.attrs.get_int("seed")));
  const uint32_t threshold = g.dropout_threshold();
  T* out = ctx.outputs[0].data<T>();
  const bool save = ctx.attrs.get_bool("save_probs");
  float* probs_out = save ? ctx.outputs[1].data<float>() : nullptr;
  int32_t* words = ctx.outputs[2].data<int32_t>();
  std::fill(words, words + ctx.outputs[2].num_elements(), 0);
  std::vector<double> p(static_cast<size_t>(g.s));
  for (int64_t n = 0; n < g.b; ++n) {
    for (int64_t hd = 0; hd < g.h; ++hd) {
      for (int64_t i = 0; i < g.t; ++i) {
        double max = -INFINITY;
        for (int64_t j = 0; j < g.s; ++j) {
          double dot = 0;
          for (int64_t c = 0; c < g.d; ++c) {
            dot += load(q, g.at(n, i, g.t, hd, g.d, c)) * load(k, g.at(n, j, g.s, hd, g.d, c));
          }
          p[j] = g.allowed(n, i, j) ? g.scale * dot : -1e9;
          max = std::max(max, p[j]);
        }
        double sum = 0;
        for (int64_t j = 0; j < g.s; ++j) sum += p[j] = std::exp(p[j] - max);
        const int64_t row = ((n * g.h + hd) * g.t + i) * g.s;
        for (int64_t j = 0; j < g.s; ++j) {
          p[j] /= sum;
          if (probs_out) probs_out[row + j] = static_cast<float>(p[j]);
          if (g.rate > 0) {
            const uint64_t e = static_cast<uint64_t>(row + j);
            const bool keep = rng(e / 4, offset)[e % 4] >= threshold;
            p[j] = keep ? p[j] * g.inv_keep() : 0.0;
            if (keep && save) words[e / 32] |= static_cast<int32_t>(1u << (e % 32));
          }
        }
        for (int64_t c = 0; c < g.dv; ++c) {
          double acc = 0;
          for (int64_t j = 0; j < g.s; ++j) acc += p[j] * load(v, g.at(n, j, g.s, hd, g.dv, c));
          out[g.at(n, i, g.t, hd, g.dv, c)] = static_cast<T>(static_cast<compute_t<T>>(acc));
        }
      }
    }
  }
}

// dv = pd^T dout, dpd = dout v^T, dp = dpd * keep / (1 - rate), ds = p (dp - rowsum(dp p)) (0
// where masked out: where's gradient), dq = scale ds k, dk = scale ds^T q; pd = dropout(p).
template <typename T>
void attention_grad_ref(KernelContext& ctx) {
  const Geometry g(ctx, 1, 6);
  const T* dout = ctx.inputs[0].data<T>();
  const T *q = ctx.inputs[1].data<T>(), *k = ctx.inputs[2].data<T>(), *v = ctx.inputs[3].data<T>();
  const float* probs = ctx.inputs[4].data<float>();
  const int32_t* words = ctx.inputs[5].data<int32_t>();
  T *dq = ctx.outputs[0].data<T>(), *dk = ctx.outputs[1].data<T>(), *dv = ctx.outputs[2].data<T>();
  const size_t ts = static_cast<size_t>(g.t * g.s);
  std::vector<double> pd(ts), ds(ts), dq_acc(static_cast<size_t>(g.t * g.d)),
      dk_acc(static_cast<size_t>(g.s * g.d)), dv_acc(static_cast<size_t>(g.s * g.dv));
  // With bias_sums: dq's, dk's and dv's sums over batch and time, [H, D] each.
  std::vector<std::vector<double>> sums;
  if (ctx.attrs.get_bool("bias_sums")) {
    sums = {std::vector<double>(static_cast<size_t>(g.h * g.d)),
            std::vector<double>(static_cast<size_t>(g.h * g.d)),
            std::vector<double>(static_cast<size_t>(g.h * g.dv))};
  }
  for (int64_t n = 0; n < g.b; ++n) {
    for (int64_t hd = 0; hd < g.h; ++hd) {
      const int64_t base = (n * g.h + hd) * g.t * g.s;
      auto keep = [&](int64_t e) {
        return g.rate == 0 || ((static_cast<uint32_t>(words[e / 32]) >> (e % 32)) & 1u);
      };
      for (int64_t e = 0; e < g.t * g.s; ++e) {
        const double drop = keep(base + e) ? (g.rate > 0 ? g.inv_keep() : 1.0) : 0.0;
        pd[static_cast<size_t>(e)] = static_cast<double>(probs[base + e]) * drop;
      }
      std::fill(dv_acc.begin(), dv_acc.end(), 0.0);
      for (int64_t i = 0; i < g.t; ++i) {
        double dot_sum = 0;
        for (int64_t j = 0; j < g.s; ++j) {
          double dpd = 0;
          for (int64_t c = 0; c < g.dv; ++c) {
            const double o = load(dout, g.at(n, i, g.t, hd, g.dv, c));
            dpd += o * load(v, g.at(n, j, g.s, hd, g.dv, c));
            dv_acc[static_cast<size_t>(j * g.dv + c)] += pd[static_cast<size_t>(i * g.s + j)] * o;
          }
          const int64_t e = i * g.s + j;
          const double dp = keep(base + e) ? dpd * (g.rate > 0 ? g.inv_keep() : 1.0) : 0.0;
          ds[static_cast<size_t>(e)] = dp;
          dot_sum += dp * static_cast<double>(probs[base + e]);
        }
        for (int64_t j = 0; j < g.s; ++j) {
          const size_t e = static_cast<size_t>(i * g.s + j);
          const double p = static_cast<double>(probs[base + static_cast<int64_t>(e)]);
          ds[e] = g.allowed(n, i, j) ? p * (ds[e] - dot_sum) : 0.0;
        }
      }
      std::fill(dq_acc.begin(), dq_acc.end(), 0.0);
      std::fill(dk_acc.begin(), dk_acc.end(), 0.0);
      for (int64_t i = 0; i < g.t; ++i) {
        for (int64_t j = 0; j < g.s; ++j) {
          const double x = ds[static_cast<size_t>(i * g.s + j)] * g.scale;
          for (int64_t c = 0; c < g.d; ++c) {
            dq_acc[static_cast<size_t>(i * g.d + c)] += x * load(k, g.at(n, j, g.s, hd, g.d, c));
            dk_acc[static_cast<size_t>(j * g.d + c)] += x * load(q, g.at(n, i, g.t, hd, g.d, c));
          }
        }
      }
      auto store = [](T* dst, int64_t i, double x) {
        dst[i] = static_cast<T>(static_cast<compute_t<T>>(x));
      };
      for (int64_t i = 0; i < g.t; ++i) {
        for (int64_t c = 0; c < g.d; ++c) {
          store(dq, g.at(n, i, g.t, hd, g.d, c), dq_acc[static_cast<size_t>(i * g.d + c)]);
          if (!sums.empty())
            sums[0][static_cast<size_t>(hd * g.d + c)] += dq_acc[static_cast<size_t>(i * g.d + c)];
        }
      }
      for (int64_t j = 0; j < g.s; ++j) {
        for (int64_t c = 0; c < g.d; ++c) {
          store(dk, g.at(n, j, g.s, hd, g.d, c), dk_acc[static_cast<size_t>(j * g.d + c)]);
          if (!sums.empty())
            sums[1][static_cast<size_t>(hd * g.d + c)] += dk_acc[static_cast<size_t>(j * g.d + c)];
        }
        for (int64_t c = 0; c < g.dv; ++c) {
          store(dv, g.at(n, j, g.s, hd, g.dv, c), dv_acc[static_cast<size_t>(j * g.dv + c)]);
          if (!sums.empty()) {
            sums[2][static_cast<size_t>(hd * g.dv + c)] +=
                dv_acc[static_cast<size_t>(j * g.dv + c)];
          }
        }
      }
    }
  }
  // bias_sums: the gradients as computed (before rounding to the heads' dtype), summed over batch
  // and time per (head, c).
  if (sums.empty()) return;
  for (int k = 0; k < 3; ++k) {
    float* out = ctx.outputs[static_cast<size_t>(3 + k)].data<float>();
    const std::vector<double>& acc = sums[k];
    for (size_t c = 0; c < acc.size(); ++c) out[c] = static_cast<float>(acc[c]);
  }
}

}  // namespace

void register_attention_ref(KernelRegistry& r) {
  add_ref(r, "attention", ops::kFloatDTypes, [](KernelContext& ctx) {
    dispatch_float(ctx.inputs[0].dtype(), "attention",
                   [&](auto tag) { attention_ref<decltype(tag)>(ctx); });
  });
  add_ref(r, "attention_grad", ops::kFloatDTypes, [](KernelContext& ctx) {
    dispatch_float(ctx.inputs[1].dtype(), "attention_grad",
                   [&](auto tag) { attention_grad_ref<decltype(tag)>(ctx); });
  });
}

}  // namespace tern::kernels::ref
