// Test helpers for the oneDNN kernels: run an op with the "onednn" candidate and with "ref" and
// compare, ask which candidate selection picks, and ask why "onednn" declines.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "tern/backends/cpu/cpu_backend.h"
#include "tern/backends/cpu/cpu_isa.h"
#include "tern/device/device.h"
#include "tern/kernels/kernel.h"
#include "tern/ops/registry.h"
#include "tern/runtime/eager.h"
#include "tern/runtime/runtime.h"
#include "tests/support/random_tensor.h"

namespace tern::testing {

// Whether got and want differ where a plain difference cannot tell: one NaN and the other not, or
// infinities other than the same one on both sides (then the helpers below return infinity; two
// NaNs or the same infinity match). std::max(worst, NaN) keeps `worst`, so without this a NaN,
// e.g. an output pixel a kernel never wrote in a NaN-filled buffer, passed for no error.
inline bool mismatched_non_finite(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) != std::isnan(b);
  return (std::isinf(a) || std::isinf(b)) && a != b;
}

// Max over elements of |got - want| / (1 + |want|); infinity where the two differ in NaN or
// infinity (mismatched_non_finite), and where their element counts differ.
inline double max_rel_error(const Tensor& got, const Tensor& want) {
  if (got.num_elements() != want.num_elements()) return HUGE_VAL;
  double worst = 0;
  for (int64_t i = 0; i < got.num_elements(); ++i) {
    double a = got.get(i), b = want.get(i);
    if (mismatched_non_finite(a, b)) return HUGE_VAL;
    if (!std::isfinite(a)) continue;  // the same NaN or infinity on both sides
    worst = std::max(worst, std::fabs(a - b) / (1.0 + std::fabs(b)));
  }
  return worst;
}

// Whether `op` has a CPU candidate called `name`.
inline bool has_candidate(std::string_view op, std::string_view name) {
  runtime::initialize();
  for (const kernels::KernelCandidate* c :
       kernels::KernelRegistry::global().candidates(op, DeviceType::kCPU)) {
    if (c->name == name) return true;
  }
  return false;
}

// The largest |got - want| relative to 1 + the largest |want|: the error of kernels whose bf16
// products round sums of inputs (tern's F(2x2, 3x3) Winograd), a fraction of the terms' scale.
// Infinity where the two differ in NaN or infinity, as max_rel_error.
inline double max_scaled_error(const Tensor& got, const Tensor& want) {
  if (got.num_elements() != want.num_elements()) return HUGE_VAL;
  double diff = 0, scale = 0;
  for (int64_t i = 0; i < got.num_elements(); ++i) {
    const double a = got.get(i), b = want.get(i);
    if (mismatched_non_finite(a, b)) return HUGE_VAL;
    if (!std::isfinite(a)) continue;
    diff = std::max(diff, std::fabs(a - b));
    scale = std::max(scale, std::fabs(b));
  }
  return diff / (1.0 + scale);
}

// Runs `op` with the oneDNN kernel and the reference kernel; expects every output to agree
// within `tol` (relative to 1 + |ref|, or with `of_scale` max_scaled_error). With bf16 inputs,
// the widened kernel ("onednn_f32", bf16 computed in f32; onednn_widen.cc) is checked the same
// way where the op has one.
inline void expect_onednn_matches_ref(std::string_view op, const std::vector<Tensor>& inputs,
                                      const ops::Attrs& attrs, double tol, bool of_scale = false) {
  std::vector<std::string> kernels = {"onednn"};
  if (!inputs.empty() && inputs[0].dtype() == DType::kBF16 && has_candidate(op, "onednn_f32")) {
    kernels.push_back("onednn_f32");
  }
  runtime::EagerOptions ref;
  ref.kernel = "ref";
  std::vector<Tensor> want = runtime::eager_call(op, inputs, attrs, ref);
  for (const std::string& k : kernels) {
    runtime::EagerOptions fast;
    fast.kernel = k;
    std::vector<Tensor> got = runtime::eager_call(op, inputs, attrs, fast);
    ASSERT_EQ(got.size(), want.size()) << k;
    for (size_t i = 0; i < got.size(); ++i) {
      ASSERT_EQ(got[i].type(), want[i].type()) << op << " output " << i << " (" << k << ")";
      EXPECT_LE(of_scale ? max_scaled_error(got[i], want[i]) : max_rel_error(got[i], want[i]), tol)
          << op << " output " << i << " (" << k << ")";
    }
  }
}

// The widened kernel ("onednn_f32") on bf16 `inputs` is bit for bit the f32 "onednn" kernel on
// their f32 values, with each output that is bf16 rounded once (the cast kernel's rounding).
inline void expect_widened_is_f32_kernel(std::string_view op, const std::vector<Tensor>& inputs,
                                         const ops::Attrs& attrs) {
  runtime::EagerOptions widened, f32;
  widened.kernel = "onednn_f32";
  f32.kernel = "onednn";
  std::vector<Tensor> wide;
  for (const Tensor& t : inputs) {
    wide.push_back(runtime::eager_call1("cast", {t}, {{"dtype", DType::kF32}}));
  }
  std::vector<Tensor> got = runtime::eager_call(op, inputs, attrs, widened);
  std::vector<Tensor> want = runtime::eager_call(op, wide, attrs, f32);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    Tensor w = want[i];
    if (got[i].dtype() == DType::kBF16) {
      w = runtime::eager_call1("cast", {w}, {{"dtype", DType::kBF16}});
    }
    ASSERT_EQ(got[i].type(), w.type()) << op << " output " << i;
    EXPECT_EQ(max_rel_error(got[i], w), 0.0) << op << " output " << i;
  }
}

inline kernels::KernelSignature signature_of(std::string_view op_name,
                                             const std::vector<TensorType>& inputs,
                                             ops::Attrs* attrs) {
  runtime::initialize();
  const ops::OpDef& op = ops::OpRegistry::global().get(op_name);
  std::vector<TensorType> outputs = op.check_and_infer(op_name, inputs, *attrs);
  return kernels::KernelSignature{&op, attrs, inputs, outputs, DeviceType::kCPU, false, {}};
}

// The candidate normal selection picks.
inline std::string selected_kernel(std::string_view op, const std::vector<TensorType>& inputs,
                                   ops::Attrs attrs = {}) {
  kernels::KernelSignature sig = signature_of(op, inputs, &attrs);
  return kernels::KernelRegistry::global().select(sig).candidate->name;
}

// True where the vectorized families' AVX-512 kernels are registered (x86-64-v3 families on a CPU
// that runs AVX-512: cpu_runs_v4_variants).
inline bool runs_avx512_kernels() {
  runtime::initialize();
  return cpu::cpu_isa() == cpu::CpuIsa::kX86_64_v3 && cpu::cpu_runs_v4_variants();
}

// True if this CPU runs oneDNN's bf16 kernels (AVX-512 and up); the CPU backend says so through
// supports(kBF16Compute), and the kernels decline bf16 where it does not.
inline bool cpu_supports_bf16() {
  runtime::initialize();
  return DeviceRegistry::global().get(DeviceType::kCPU).supports(DeviceCapability::kBF16Compute);
}

// Parameterized oneDNN tests: bf16 cases are skipped, saying why, on a CPU without bf16 kernels.
class OneDnnDTypeTest : public ::testing::TestWithParam<DType> {
 protected:
  void SetUp() override {
    if (GetParam() == DType::kBF16 && !cpu_supports_bf16()) {
      GTEST_SKIP() << "this CPU has no AVX-512: oneDNN declines bf16 (see onednn_common.cc)";
    }
  }
};

// Why the "onednn" candidate declines ("" = it accepts).
inline std::string onednn_decline_reason(std::string_view op, const std::vector<TensorType>& inputs,
                                         ops::Attrs attrs = {}) {
  kernels::KernelSignature sig = signature_of(op, inputs, &attrs);
  for (const kernels::KernelCandidate* c :
       kernels::KernelRegistry::global().candidates(op, DeviceType::kCPU)) {
    if (c->name == "onednn") return c->decline ? c->decline(sig) : "";
  }
  return "no onednn candidate";
}

// bf16 goes to oneDNN where the CPU supports it (to the widened kernel where the op has one and
// this CPU prefers it); elsewhere oneDNN's bf16 kernels decline and say why, and matmuls and
// convolutions go to the widened kernel.
inline void expect_onednn_picked_for_bf16(std::string_view op,
                                          const std::vector<TensorType>& inputs,
                                          ops::Attrs attrs = {}) {
  if (cpu_supports_bf16()) {
    const bool widened = cpu::bf16_contractions_widened() && has_candidate(op, "onednn_f32");
    EXPECT_EQ(selected_kernel(op, inputs, attrs), widened ? "onednn_f32" : "onednn")
        << op << " (" << cpu::bf16_contractions_mode() << ")";
  } else {
    EXPECT_NE(onednn_decline_reason(op, inputs, attrs).find("needs AVX-512"), std::string::npos)
        << op;
    // Matmuls and convolutions still run fast: widened to f32.
    if (has_candidate(op, "onednn_f32")) {
      EXPECT_EQ(selected_kernel(op, inputs, attrs), "onednn_f32") << op;
      EXPECT_EQ(cpu::bf16_contractions_mode(), "widened to f32 (no AVX-512)");
    }
  }
}

}  // namespace tern::testing
