// Keras-style initializers on top of the eager random ops.
#include "tern/runtime/initializers.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <utility>

#include "tern/ops/registry.h"
#include "tern/runtime/eager.h"

namespace tern::runtime::init {
namespace {

// Stddev of a standard normal truncated to [-2, 2].
constexpr double kTruncatedStddev = 0.87962566103423978;

Tensor random_op(std::string_view op, const Shape& shape, DType dtype, uint64_t seed,
                 std::pair<const char*, double> p0, std::pair<const char*, double> p1) {
  ops::Attrs attrs = {{"shape", shape.dims()},
                      {"dtype", dtype},
                      {"seed", static_cast<int64_t>(seed)},
                      {p0.first, p0.second},
                      {p1.first, p1.second}};
  return eager_call1(op, {}, attrs);
}

Tensor uniform(const Shape& shape, DType dtype, uint64_t seed, double lo, double hi) {
  return random_op("random_uniform", shape, dtype, seed, {"minval", lo}, {"maxval", hi});
}

Tensor normal(std::string_view op, const Shape& shape, DType dtype, uint64_t seed, double mean,
              double stddev) {
  return random_op(op, shape, dtype, seed, {"mean", mean}, {"stddev", stddev});
}

// Random initializers produce floating dtypes only.
Initializer random_initializer(std::string name, Initializer::Fn fn) {
  return Initializer(name, [name, fn = std::move(fn)](const Shape& s, DType d, uint64_t seed) {
    TERN_CHECK_ARG(is_floating(d), "initializer '", name, "': dtype ", dtype_name(d),
                   " is not a floating type");
    return fn(s, d, seed);
  });
}

// Variance scaling (see the header) under `name`.
Initializer scaled_initializer(std::string name, double scale, FanMode mode, Distribution dist) {
  TERN_CHECK_ARG(scale > 0 && std::isfinite(scale), "initializer '", name,
                 "': scale must be > 0, got ", scale);
  return random_initializer(std::move(name), [=](const Shape& s, DType d, uint64_t seed) {
    Fans f = compute_fans(s);
    double fan = mode == FanMode::kFanIn    ? f.in
                 : mode == FanMode::kFanOut ? f.out
                                            : (f.in + f.out) / 2;
    double var = scale / std::max(1.0, fan);
    switch (dist) {
      case Distribution::kUniform: {
        double limit = std::sqrt(3.0 * var);
        return uniform(s, d, seed, -limit, limit);
      }
      case Distribution::kTruncatedNormal:
        return normal("truncated_normal", s, d, seed, 0.0, std::sqrt(var) / kTruncatedStddev);
      case Distribution::kUntruncatedNormal:
        break;
    }
    return normal("random_normal", s, d, seed, 0.0, std::sqrt(var));
  });
}

// "GlorotUniform", "glorot_uniform" and "glorot-uniform" all name the same initializer.
std::string canonical(std::string_view name) {
  std::string out;
  for (char ch : name) {
    if (ch != '_' && ch != '-')
      out.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(ch))));
  }
  return out;
}

const std::vector<std::pair<std::string, Initializer (*)()>>& named() {
  static const std::vector<std::pair<std::string, Initializer (*)()>> table = {
      {"zeros", zeros},
      {"ones", ones},
      {"random_uniform", [] { return random_uniform(); }},
      {"random_normal", [] { return random_normal(); }},
      {"truncated_normal", [] { return truncated_normal(); }},
      {"glorot_uniform", glorot_uniform},
      {"glorot_normal", glorot_normal},
      {"he_uniform", he_uniform},
      {"he_normal", he_normal},
      {"lecun_uniform", lecun_uniform},
      {"lecun_normal", lecun_normal},
  };
  return table;
}

}  // namespace

Fans compute_fans(const Shape& shape) {
  const int r = shape.rank();
  if (r == 0) return {1, 1};
  if (r == 1) return {static_cast<double>(shape[0]), static_cast<double>(shape[0])};
  double receptive = 1;
  for (int i = 0; i < r - 2; ++i) receptive *= static_cast<double>(shape[i]);
  return {static_cast<double>(shape[r - 2]) * receptive,
          static_cast<double>(shape[r - 1]) * receptive};
}

Tensor Initializer::operator()(const Shape& shape, DType dtype, uint64_t seed) const {
  return fn_(shape, dtype, seed);
}

Initializer zeros() {
  return constant(0.0);
}
Initializer ones() {
  return constant(1.0);
}

Initializer constant(double value) {
  return Initializer(
      value == 0.0   ? "zeros"
      : value == 1.0 ? "ones"
                     : str_cat("constant(", value, ")"),
      [value](const Shape& s, DType d, uint64_t) { return Tensor::full(d, s, value); });
}

Initializer random_uniform(double minval, double maxval) {
  return random_initializer("random_uniform", [=](const Shape& s, DType d, uint64_t seed) {
    return uniform(s, d, seed, minval, maxval);
  });
}

Initializer random_normal(double mean, double stddev) {
  return random_initializer("random_normal", [=](const Shape& s, DType d, uint64_t seed) {
    return normal("random_normal", s, d, seed, mean, stddev);
  });
}

Initializer truncated_normal(double mean, double stddev) {
  return random_initializer("truncated_normal", [=](const Shape& s, DType d, uint64_t seed) {
    return normal("truncated_normal", s, d, seed, mean, stddev);
  });
}

Initializer variance_scaling(double scale, FanMode mode, Distribution distribution) {
  return scaled_initializer("variance_scaling", scale, mode, distribution);
}

Initializer glorot_uniform() {
  return scaled_initializer("glorot_uniform", 1.0, FanMode::kFanAvg, Distribution::kUniform);
}
Initializer glorot_normal() {
  return scaled_initializer("glorot_normal", 1.0, FanMode::kFanAvg, Distribution::kTruncatedNormal);
}
Initializer he_uniform() {
  return scaled_initializer("he_uniform", 2.0, FanMode::kFanIn, Distribution::kUniform);
}
Initializer he_normal() {
  return scaled_initializer("he_normal", 2.0, FanMode::kFanIn, Distribution::kTruncatedNormal);
}
Initializer lecun_uniform() {
  return scaled_initializer("lecun_uniform", 1.0, FanMode::kFanIn, Distribution::kUniform);
}
Initializer lecun_normal() {
  return scaled_initializer("lecun_normal", 1.0, FanMode::kFanIn, Distribution::kTruncatedNormal);
}

Initializer by_name(std::string_view name) {
  std::string key = canonical(name);
  for (const auto& [n, make] : named()) {
    if (canonical(n) == key) return make();
  }
  throw_error(ErrorCode::kNotFound, "unknown initializer '", name, "' (did you mean '",
              ops::closest_name(name, initializer_names()), "'?)");
}

std::vector<std::string> initializer_names() {
  std::vector<std::string> out;
  for (const auto& [n, _] : named()) out.push_back(n);
  return out;
}

}  // namespace tern::runtime::init
