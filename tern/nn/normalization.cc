// Normalization layer: streaming exact adapt() and the standardizing forward pass.
#include "tern/nn/normalization.h"

#include <tuple>

namespace tern::nn {
namespace {

// Per-feature count, mean and sum of squared deviations, merged batch by batch.
struct Moments {
  int64_t count = 0;
  std::vector<double> mean, m2;

  void add_batch(const Tensor& batch, const std::string& layer) {
    const Shape& s = batch.shape();
    if (s.rank() < 2) {
      throw_error(ErrorCode::kInvalidArgument, "Normalization layer '", layer,
                  "': adapt() needs data of rank >= 2 (samples, ..., features), got ", s);
    }
    if (batch.dtype() == DType::kBool) {
      throw_error(ErrorCode::kInvalidArgument, "Normalization layer '", layer,
                  "': adapt() needs numeric data, got ", batch.type().to_string());
    }
    size_t d = static_cast<size_t>(s.dim(s.rank() - 1));
    if (mean.empty()) {
      mean.assign(d, 0.0);
      m2.assign(d, 0.0);
    } else if (d != mean.size()) {
      throw_error(ErrorCode::kInvalidArgument, "Normalization layer '", layer,
                  "': adapt() batch of shape ", s, " has ", d, " features, earlier batches had ",
                  mean.size());
    }
    if (d == 0 || batch.num_elements() == 0) return;
    Tensor x = batch.dtype() == DType::kF64 ? batch : batch.cast(DType::kF64);
    const double* p = x.data<double>();
    int64_t rows = x.num_elements() / static_cast<int64_t>(d);
    // Two passes within the batch (mean, then squared deviations), then Chan's merge.
    std::vector<double> bmean(d, 0.0), bm2(d, 0.0);
    for (int64_t r = 0; r < rows; ++r) {
      for (size_t j = 0; j < d; ++j) bmean[j] += p[static_cast<size_t>(r) * d + j];
    }
    for (size_t j = 0; j < d; ++j) bmean[j] /= static_cast<double>(rows);
    for (int64_t r = 0; r < rows; ++r) {
      for (size_t j = 0; j < d; ++j) {
        double dev = p[static_cast<size_t>(r) * d + j] - bmean[j];
        bm2[j] += dev * dev;
      }
    }
    double n_a = static_cast<double>(count), n_b = static_cast<double>(rows), n = n_a + n_b;
    for (size_t j = 0; j < d; ++j) {
      double delta = bmean[j] - mean[j];
      mean[j] += delta * n_b / n;
      m2[j] += bm2[j] + delta * delta * n_a * n_b / n;
    }
    count += rows;
  }
};

// Reads every batch of `next`; returns (mean, biased variance) per feature.
std::pair<std::vector<double>, std::vector<double>> moments_of(
    const NormalizationLayer::BatchSource& next, const std::string& layer) {
  Moments m;
  while (std::optional<Tensor> batch = next()) m.add_batch(*batch, layer);
  if (m.count == 0) {
    throw_error(ErrorCode::kInvalidArgument, "Normalization layer '", layer,
                "': adapt() got no samples");
  }
  std::vector<double> variance(m.m2.size());
  for (size_t j = 0; j < variance.size(); ++j) variance[j] = m.m2[j] / static_cast<double>(m.count);
  return {std::move(m.mean), std::move(variance)};
}

// A source yielding `data` once.
NormalizationLayer::BatchSource once(const Tensor& data) {
  return [data, done = false]() mutable -> std::optional<Tensor> {
    if (done) return std::nullopt;
    done = true;
    return data;
  };
}

Tensor f32_vector(const std::vector<double>& v) {
  return Tensor::from_values(DType::kF32, Shape{static_cast<int64_t>(v.size())}, v);
}

}  // namespace

NormalizationLayer::NormalizationLayer(NormalizationOptions options)
    : Layer(options.name.empty() ? default_layer_name("normalization") : options.name),
      options_(std::move(options)) {
  TERN_CHECK_ARG(options_.mean.size() == options_.variance.size(), "Normalization layer '", name(),
                 "': mean and variance must be given together with one entry per feature, got ",
                 options_.mean.size(), " and ", options_.variance.size());
  for (double v : options_.variance) {
    TERN_CHECK_ARG(v >= 0, "Normalization layer '", name(), "': variance must be >= 0, got ", v);
  }
  mean_ = options_.mean;
  variance_ = options_.variance;
}

void NormalizationLayer::build(WeightBuilder& w, std::span<const TensorType> inputs) {
  const Shape& s = inputs[0].shape;
  TERN_CHECK_ARG(s.rank() >= 2, "Normalization layer '", name(),
                 "' needs input of rank >= 2 (batch, ..., features), got ", s);
  int64_t d = s.dim(s.rank() - 1);
  if (adapted() && static_cast<int64_t>(mean_.size()) != d) {
    throw_error(ErrorCode::kInvalidArgument, "Normalization layer '", name(), "' was adapted to ",
                mean_.size(), " features, got input of shape ", s);
  }
  auto stat = [&](const std::vector<double>& adapted_values, double fill) {
    std::vector<double> v =
        adapted() ? adapted_values : std::vector<double>(static_cast<size_t>(d), fill);
    return runtime::init::Initializer("adapted",
                                      [v](const Shape&, DType, uint64_t) { return f32_vector(v); });
  };
  Shape f{d};
  mean_w_ = {w.add("mean", f, stat(mean_, 0.0), false), {DType::kF32, f}, false};
  variance_w_ = {w.add("variance", f, stat(variance_, 1.0), false), {DType::kF32, f}, false};
}

std::vector<ir::Value*> NormalizationLayer::call(LayerContext& ctx,
                                                 std::span<ir::Value* const> inputs) {
  ir::Value* x = single_input(*this, inputs);
  ir::Graph& g = ctx.graph;
  int64_t d = mean_w_.type.shape.dim(0);
  const Shape& s = x->shape();
  if (s.rank() < 2 || s.dim(s.rank() - 1) != d) {
    throw_error(ErrorCode::kInvalidArgument, "Normalization layer '", name(), "' was built for ", d,
                " features, got input of shape ", s);
  }
  if (x->dtype() != DType::kF32) x = g.add("cast", {x}, {{"dtype", DType::kF32}}, name() + "/cast");
  ir::Value* centered = g.add("sub", {x, ctx.read(mean_w_)}, {}, name() + "/center");
  ir::Value* stddev = g.add("sqrt", {ctx.read(variance_w_)}, {}, name() + "/stddev");
  stddev = g.add("maximum", {stddev, g.scalar(DType::kF32, 1e-7)}, {}, name() + "/stddev_floor");
  return {g.add("div", {centered, stddev}, {}, name())};
}

std::string NormalizationLayer::describe() const {
  return adapted() ? str_cat("features=", mean_.size()) : "not adapted";
}

void NormalizationLayer::adapt(const Tensor& data) {
  adapt(once(data));
}

void NormalizationLayer::adapt(const BatchSource& next) {
  if (built()) {
    throw_error(ErrorCode::kFailedPrecondition, "Normalization layer '", name(),
                "' is already built into a model: call adapt() before building the model, or "
                "adapt(data, model.variables()) to update its weights");
  }
  std::tie(mean_, variance_) = moments_of(next, name());
}

void NormalizationLayer::adapt(const Tensor& data, runtime::VariableStore& store) {
  adapt(once(data), store);
}

void NormalizationLayer::adapt(const BatchSource& next, runtime::VariableStore& store) {
  if (!built()) return adapt(next);
  auto [mean, variance] = moments_of(next, name());
  if (static_cast<int64_t>(mean.size()) != mean_w_.type.shape.dim(0)) {
    throw_error(ErrorCode::kInvalidArgument, "Normalization layer '", name(), "' was built for ",
                mean_w_.type.shape.dim(0), " features, adapt() data has ", mean.size());
  }
  mean_ = std::move(mean);
  variance_ = std::move(variance);
  write_weights(store);
}

void NormalizationLayer::write_weights(runtime::VariableStore& store) const {
  store.assign(mean_w_.name, f32_vector(mean_));
  store.assign(variance_w_.name, f32_vector(variance_));
}

NormalizationRef Normalization(NormalizationOptions options) {
  return NormalizationRef(std::make_shared<NormalizationLayer>(std::move(options)));
}

}  // namespace tern::nn
