// Keras-style weight initializers. Each maps (shape, dtype, seed) to a new Tensor; the random ones
// run the random ops (random_uniform, random_normal, truncated_normal) on the eager path, so the
// same seed always gives the same values and a graph can reproduce them with the same attributes.
//
// Fans follow Keras: [] -> (1, 1); [n] -> (n, n); dense [in, out] -> (in, out); conv HWIO
// [kh, kw, in, out] (any rank >= 3) -> (in * receptive, out * receptive), receptive =
// product of the leading dims. Variance scaling: s = scale / max(1, fan), then
//   uniform:            U(-sqrt(3 s), sqrt(3 s))
//   truncated normal:   N(0, sqrt(s) / 0.8796...) cut at 2 stddevs (so the result has variance s)
//   untruncated normal: N(0, sqrt(s))
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "tern/tensor/tensor.h"

namespace tern::runtime::init {

struct Fans {
  double in = 1;
  double out = 1;
};
Fans compute_fans(const Shape& shape);

enum class FanMode { kFanIn, kFanOut, kFanAvg };
enum class Distribution { kTruncatedNormal, kUntruncatedNormal, kUniform };

class Initializer {
 public:
  using Fn = std::function<Tensor(const Shape& shape, DType dtype, uint64_t seed)>;
  Initializer(std::string name, Fn fn) : name_(std::move(name)), fn_(std::move(fn)) {}

  const std::string& name() const { return name_; }
  // A new tensor; InvalidArgument naming the initializer for a dtype it cannot produce.
  Tensor operator()(const Shape& shape, DType dtype = DType::kF32, uint64_t seed = 0) const;

 private:
  std::string name_;
  Fn fn_;
};

Initializer zeros();
Initializer ones();
Initializer constant(double value);
Initializer random_uniform(double minval = -0.05, double maxval = 0.05);
Initializer random_normal(double mean = 0.0, double stddev = 0.05);
Initializer truncated_normal(double mean = 0.0, double stddev = 0.05);
// InvalidArgument unless scale > 0.
Initializer variance_scaling(double scale, FanMode mode, Distribution distribution);
Initializer glorot_uniform();  // scale 1, fan_avg, uniform
Initializer glorot_normal();   // scale 1, fan_avg, truncated normal
Initializer he_uniform();      // scale 2, fan_in, uniform
Initializer he_normal();       // scale 2, fan_in, truncated normal
Initializer lecun_uniform();   // scale 1, fan_in, uniform
Initializer lecun_normal();    // scale 1, fan_in, truncated normal

// The initializer with default arguments for a Keras name ("glorot_uniform", "he_normal",
// "zeros", ...); NotFound naming the closest known name otherwise.
Initializer by_name(std::string_view name);
std::vector<std::string> initializer_names();

}  // namespace tern::runtime::init
