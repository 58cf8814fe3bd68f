// The consistency harness: coverage, every backend vs ref, every gradient vs finite differences.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <set>
#include <tuple>

#include "tern/autodiff/autodiff.h"
#include "tern/base/fingerprint.h"
#include "tern/base/philox.h"
#include "tern/ir/graph.h"
#include "tern/kernels/kernel.h"
#include "tern/ops/registry.h"
#include "tern/runtime/eager.h"
#include "tern/runtime/placement.h"
#include "tern/runtime/runtime.h"
#include "tests/consistency/op_case.h"
#include "tests/support/emulated_device.h"

namespace tern::testing {

namespace {
std::vector<std::vector<OpCase> (*)()>& case_fns() {
  static std::vector<std::vector<OpCase> (*)()> fns;
  return fns;
}
}  // namespace

OpCaseRegistrar::OpCaseRegistrar(std::vector<OpCase> (*fn)()) {
  case_fns().push_back(fn);
}

std::vector<OpCase> all_op_cases() {
  std::vector<OpCase> out;
  for (auto fn : case_fns()) {
    for (auto& c : fn()) out.push_back(std::move(c));
  }
  return out;
}

namespace {

std::string case_name(const OpCase& c, size_t index) {
  return c.label.empty() ? str_cat(c.op, "#", index) : str_cat(c.op, "[", c.label, "]");
}

std::vector<DType> case_dtypes(const OpCase& c) {
  const ops::OpDef& op = ops::OpRegistry::global().get(c.op);
  if (c.dtypes.empty()) return op.dtypes;
  return c.dtypes;
}

// Inputs for a case at `dtype`, generated in f64 so every dtype sees the same values.
std::vector<Tensor> make_inputs(const OpCase& c, DType dtype, uint64_t seed) {
  std::vector<Tensor> out;
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    const InputSpec& s = c.inputs[i];
    DType d = s.dtype.value_or(dtype);
    if (s.value) {
      out.push_back(s.value->cast(d));
      continue;
    }
    Tensor t(d, s.shape);
    PhiloxStream rng(seed, i);
    for (int64_t k = 0; k < t.num_elements(); ++k) {
      double v = s.lo + (s.hi - s.lo) * rng.next_double();
      if (s.integral || !is_floating(d)) v = std::floor(v);
      t.set(k, v);
    }
    if (is_floating(d)) {
      for (int64_t k : s.nan_at) t.set(k, std::nan(""));
    }
    out.push_back(t);
  }
  return out;
}

double tolerance(DType d) {
  switch (d) {
    case DType::kF64:
      return 1e-9;
    case DType::kF32:
      return 2e-4;
    case DType::kBF16:
      return 3e-2;
    case DType::kF16:
      return 4e-3;
    default:
      return 0;
  }
}

// Each element within tol * (1 + |ref|), or with `of_scale` within tol * (1 + the largest finite
// |ref|) (OpCase::bf16_error_of_scale).
// OpCase::bf16_error_of_scale's tolerance: F(2x2, 3x3) Winograd with bf16 products is within
// 3e-3 to 7e-3 of the largest |ref| (onednn_conv_winograd_test.cc, Bf16AgainstTheF32Run).
constexpr double kBf16ErrorOfScale = 1e-2;

bool close_enough(const Tensor& got, const Tensor& want, double tol, std::string* why,
                  bool nan_may_spread = false, bool of_scale = false) {
  if (got.type() != want.type()) {
    *why = str_cat("type ", got.type().to_string(), " vs ", want.type().to_string());
    return false;
  }
  double scale = 0;
  for (int64_t i = 0; of_scale && i < want.num_elements(); ++i) {
    if (std::isfinite(want.get(i))) scale = std::max(scale, std::fabs(want.get(i)));
  }
  for (int64_t i = 0; i < got.num_elements(); ++i) {
    double a = got.get(i), b = want.get(i);
    if (std::isnan(a) && (std::isnan(b) || nan_may_spread)) continue;
    if (a == b) continue;
    if (!(std::fabs(a - b) <= tol * (1.0 + (of_scale ? scale : std::fabs(b))))) {
      *why = str_cat("element ", i, ": ", a, " vs ref ", b);
      return false;
    }
  }
  return true;
}

// Ops with kTraitMutatesInputs write into their inputs: each run gets deep copies, and its
// results are its outputs followed by every input as the kernel left it.
std::vector<Tensor> clone_all(const std::vector<Tensor>& ts) {
  std::vector<Tensor> out;
  for (const Tensor& t : ts) out.push_back(t.clone());
  return out;
}

std::vector<Tensor> run_case(const OpCase& c, const std::vector<Tensor>& inputs, bool mutates,
                             const runtime::EagerOptions& options) {
  if (!mutates) return runtime::eager_call(c.op, inputs, c.attrs, options);
  std::vector<Tensor> work = clone_all(inputs);
  std::vector<Tensor> out = runtime::eager_call(c.op, work, c.attrs, options);
  out.insert(out.end(), work.begin(), work.end());
  return out;
}

TEST(Consistency, EveryRegisteredOpHasACase) {
  runtime::initialize();
  std::set<std::string> covered;
  for (const OpCase& c : all_op_cases()) covered.insert(c.op);
  for (const ops::OpDef* op : ops::OpRegistry::global().all()) {
    if (op->has_trait(ops::kTraitSource)) continue;
    EXPECT_TRUE(covered.count(op->name)) << "op '" << op->name << "' has no consistency case";
  }
}

TEST(Consistency, EveryClaimedDTypeHasARefKernel) {
  runtime::initialize();
  const auto& kreg = kernels::KernelRegistry::global();
  for (const ops::OpDef* op : ops::OpRegistry::global().all()) {
    if (op->has_trait(ops::kTraitSource)) continue;
    for (DType d : op->dtypes) {
      EXPECT_TRUE(kreg.has_ref(op->name, d))
          << "op '" << op->name << "' claims " << dtype_name(d) << " but has no ref kernel";
    }
  }
}

TEST(Consistency, EveryDifferentiableOpHasAGradientRule) {
  const auto& greg = autodiff::GradRegistry::global();
  for (const ops::OpDef* op : ops::OpRegistry::global().all()) {
    if (op->has_trait(ops::kTraitSource) || op->has_trait(ops::kTraitNotDifferentiable)) continue;
    if (op->has_trait(ops::kTraitMutatesInputs)) continue;
    EXPECT_TRUE(greg.has(op->name))
        << "op '" << op->name << "' is differentiable but has no gradient rule";
  }
}

// The oracle for every (case, dtype): the CPU's ref kernel on host inputs.
std::vector<Tensor> reference_results(const OpCase& c, const std::vector<Tensor>& inputs,
                                      bool mutates) {
  runtime::EagerOptions ref_opts;
  ref_opts.kernel = "ref";
  std::vector<Tensor> want = run_case(c, inputs, mutates, ref_opts);
  // The reference itself is deterministic.
  std::vector<Tensor> again = run_case(c, inputs, mutates, ref_opts);
  for (size_t o = 0; o < want.size(); ++o) {
    EXPECT_TRUE(bitwise_equal(want[o], again[o])) << "ref output " << o << " is not deterministic";
  }
  if (mutates) {  // a mutating case must mutate something, or it checks nothing
    bool changed = false;
    for (size_t i = 0; i < inputs.size(); ++i) {
      changed = changed || !bitwise_equal(want[want.size() - inputs.size() + i], inputs[i]);
    }
    EXPECT_TRUE(changed) << "mutating op left every input unchanged";
  }
  return want;
}

// (device, op, candidate, dtype)
using Triple = std::tuple<DeviceType, std::string, std::string, DType>;

// Every candidate a device offers for the case (the CPU's ref is the oracle, not a candidate).
std::vector<const kernels::KernelCandidate*> candidates_under_test(const std::string& op,
                                                                   DeviceType device) {
  std::vector<const kernels::KernelCandidate*> out;
  for (const kernels::KernelCandidate* cand :
       kernels::KernelRegistry::global().candidates(op, device)) {
    if (cand->device != device || (device == DeviceType::kCPU && cand->is_ref())) continue;
    out.push_back(cand);
  }
  return out;
}

// Runs `cand` on `device` (inputs copied there when it cannot read host memory) and returns its
// results on the host.
std::vector<Tensor> run_on_device(const OpCase& c, const std::vector<Tensor>& inputs, bool mutates,
                                  DeviceBackend& device, const kernels::KernelCandidate& cand) {
  std::vector<Tensor> on_device;
  for (const Tensor& t : inputs) {
    on_device.push_back(runtime::needs_copy(t, device) ? t.to_device(device) : t);
  }
  runtime::EagerOptions o;
  o.kernel = cand.name;
  o.device = device.type();
  o.constant_inputs = c.constant_inputs;
  std::vector<Tensor> got;
  for (const Tensor& t : run_case(c, on_device, mutates, o)) got.push_back(t.to_host());
  return got;
}

TEST(Consistency, EveryBackendMatchesRef) {
  register_emulated_device();
  std::vector<OpCase> cases = all_op_cases();
  std::set<Triple> compared;
  std::map<std::string, int> per_device;
  for (size_t ci = 0; ci < cases.size(); ++ci) {
    const OpCase& c = cases[ci];
    const ops::OpDef& op = ops::OpRegistry::global().get(c.op);
    for (DType d : case_dtypes(c)) {
      SCOPED_TRACE(str_cat(case_name(c, ci), " dtype ", dtype_name(d)));
      std::vector<Tensor> inputs = make_inputs(c, d, 1234 + ci);
      const bool mutates = op.has_trait(ops::kTraitMutatesInputs);
      std::vector<Tensor> want;
      try {
        want = reference_results(c, inputs, mutates);
      } catch (const Error& e) {
        ADD_FAILURE() << "ref kernel failed: " << e.what();
        continue;
      }
      std::vector<TensorType> in_types;
      for (const auto& t : inputs) in_types.push_back(t.type());
      ops::Attrs attrs = c.attrs;
      std::vector<TensorType> out_types = op.check_and_infer(c.op, in_types, attrs);
      for (DeviceBackend* device : DeviceRegistry::global().backends()) {
        kernels::KernelSignature sig{&op,   &attrs,           in_types, out_types, device->type(),
                                     false, c.constant_inputs};
        for (const kernels::KernelCandidate* cand : candidates_under_test(c.op, device->type())) {
          if (std::find(cand->dtypes.begin(), cand->dtypes.end(), d) == cand->dtypes.end())
            continue;
          // A decline is not skipped silently: EveryClaimedKernelIsCompared below fails for a
          // claimed (op, kernel, dtype) that no case reaches.
          if (cand->decline && !cand->decline(sig).empty()) continue;
          std::vector<Tensor> got = run_on_device(c, inputs, mutates, *device, *cand);
          ASSERT_EQ(got.size(), want.size());
          for (size_t k = 0; k < got.size(); ++k) {
            std::string why;
            // Results past the outputs are the inputs a mutating op updated in place.
            const bool of_scale = c.bf16_error_of_scale && d == DType::kBF16;
            EXPECT_TRUE(close_enough(got[k], want[k],
                                     of_scale ? kBf16ErrorOfScale : tolerance(want[k].dtype()),
                                     &why, c.nan_may_spread, of_scale))
                << device->device().to_string() << " kernel '" << cand->name << "' "
                << (k < out_types.size() ? "output " : "mutated input ")
                << (k < out_types.size() ? k : k - out_types.size())
                << " differs from ref: " << why;
          }
          compared.insert({device->type(), c.op, cand->name, d});
          ++per_device[device->device().to_string()];
        }
      }
    }
  }
  for (const auto& [device, n] : per_device) {
    std::cout << device << ": compared " << n << " (case, dtype, kernel) triples against ref\n";
  }
  // Every (op, kernel, dtype) a device's candidate claims was compared at least once, except
  // bf16 on a device without bf16 compute (its kernels decline bf16 there; said, not hidden).
  for (DeviceBackend* device : DeviceRegistry::global().backends()) {
    const bool bf16 = device->supports(DeviceCapability::kBF16Compute);
    int not_here = 0;
    for (const std::string& op_name : kernels::KernelRegistry::global().ops()) {
      const ops::OpDef* op = ops::OpRegistry::global().find(op_name);
      if (op == nullptr || op->has_trait(ops::kTraitSource)) continue;
      for (const kernels::KernelCandidate* cand : candidates_under_test(op_name, device->type())) {
        for (DType d : cand->dtypes) {
          if (d == DType::kBF16 && !bf16 &&
              !compared.count({device->type(), op_name, cand->name, d})) {
            ++not_here;
            continue;
          }
          EXPECT_TRUE(compared.count({device->type(), op_name, cand->name, d}))
              << device->device().to_string() << " kernel '" << cand->name << "' claims " << op_name
              << " in " << dtype_name(d)
              << " but no consistency case reached it (no case in that dtype, or it declined "
                 "every case): add a case or drop the claim";
        }
      }
    }
    if (not_here > 0) {
      std::cout << device->device().to_string() << ": " << not_here
                << " bf16 (op, kernel) claims not comparable here: no bf16 compute on this CPU\n";
    }
  }
}

// Loss = sum_k sum(output_k * weight_k) over floating outputs; weights are fixed random tensors so
// every output element matters with a distinct coefficient.
double eval_loss(const OpCase& c, const std::vector<Tensor>& inputs,
                 const std::vector<Tensor>& weights) {
  runtime::EagerOptions ref_opts;
  ref_opts.kernel = "ref";
  std::vector<Tensor> outs = runtime::eager_call(c.op, inputs, c.attrs, ref_opts);
  double loss = 0;
  for (size_t k = 0; k < outs.size(); ++k) {
    if (!weights[k].defined()) continue;
    for (int64_t i = 0; i < outs[k].num_elements(); ++i) loss += outs[k].get(i) * weights[k].get(i);
  }
  return loss;
}

TEST(Consistency, EveryGradientMatchesFiniteDifferences) {
  runtime::initialize();
  std::vector<OpCase> cases = all_op_cases();
  int checked = 0;
  // Inputs are drawn from a seed per (op, its n-th case), so adding cases of one op does not
  // redraw another op's inputs (a max pooling's near-tie can make a finite difference jump).
  std::map<std::string, uint64_t> per_op;
  for (size_t ci = 0; ci < cases.size(); ++ci) {
    const OpCase& c = cases[ci];
    const ops::OpDef& op = ops::OpRegistry::global().get(c.op);
    const uint64_t seed = 99 + (fingerprint64(c.op) & 0xffff) + per_op[c.op]++;
    if (!c.check_grad || op.has_trait(ops::kTraitNotDifferentiable) ||
        op.has_trait(ops::kTraitSource) || op.has_trait(ops::kTraitMutatesInputs) ||
        !op.claims(DType::kF64)) {
      continue;
    }
    SCOPED_TRACE(case_name(c, ci));
    std::vector<Tensor> inputs = make_inputs(c, DType::kF64, seed);
    // Graph: inputs -> op -> weighted sum.
    ir::Graph g;
    std::vector<ir::Value*> in_values, wrt;
    std::vector<size_t> wrt_index;
    for (size_t i = 0; i < inputs.size(); ++i) {
      ir::Value* v = g.input(str_cat("x", i), inputs[i].type());
      in_values.push_back(v);
      if (inputs[i].dtype() == DType::kF64 && !c.inputs[i].value) {
        wrt.push_back(v);
        wrt_index.push_back(i);
      }
    }
    if (wrt.empty()) continue;
    ir::Node* node = g.add_node(c.op, in_values, c.attrs);
    std::vector<Tensor> weights(static_cast<size_t>(node->num_outputs()));
    ir::Value* loss = nullptr;
    for (int k = 0; k < node->num_outputs(); ++k) {
      ir::Value* out = node->output(k);
      if (out->dtype() != DType::kF64) continue;
      weights[static_cast<size_t>(k)] =
          make_inputs({"", {In(out->shape(), -1, 1)}}, DType::kF64, 7 + k)[0];
      ir::Value* w = g.constant(weights[static_cast<size_t>(k)]);
      ir::Value* term = g.add("sum", {g.add("mul", {out, w})},
                              {{"axes", std::vector<int64_t>{}}, {"keepdims", false}});
      loss = loss ? g.add("add", {loss, term}) : term;
    }
    if (!loss) continue;
    std::vector<ir::Value*> grads = autodiff::gradients(g, loss, wrt);
    for (size_t i = 0; i < grads.size(); ++i) g.add_output(str_cat("g", i), grads[i]);
    runtime::Feeds feeds;
    for (size_t i = 0; i < inputs.size(); ++i) feeds.push_back({str_cat("x", i), inputs[i]});
    runtime::EagerOptions ref_opts;
    ref_opts.kernel = "ref";
    std::vector<Tensor> analytic = runtime::run_graph_eager(g, feeds, nullptr, ref_opts);
    for (size_t w = 0; w < wrt_index.size(); ++w) {
      size_t i = wrt_index[w];
      Tensor x = inputs[i];
      int64_t n = x.num_elements();
      int64_t stride = std::max<int64_t>(1, n / 48);  // check at most ~48 elements per input
      for (int64_t e = 0; e < n; e += stride) {
        const double eps = 1e-6;
        std::vector<Tensor> plus = inputs, minus = inputs;
        plus[i] = x.clone();
        minus[i] = x.clone();
        plus[i].set(e, x.get(e) + eps);
        minus[i].set(e, x.get(e) - eps);
        double numeric = (eval_loss(c, plus, weights) - eval_loss(c, minus, weights)) / (2 * eps);
        double got = analytic[w].get(e);
        EXPECT_NEAR(got, numeric, c.grad_tolerance * (1.0 + std::fabs(numeric)))
            << "d loss / d input " << i << " element " << e;
      }
      ++checked;
    }
  }
  std::cout << "checked " << checked << " gradients against finite differences\n";
}

}  // namespace
}  // namespace tern::testing
