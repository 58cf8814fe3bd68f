// KernelRegistry: ordered candidates and selection with reasons.
#include "tern/kernels/kernel.h"

#include <algorithm>

#include "tern/base/logging.h"

namespace tern::kernels {
namespace {

// The CPU's reference kernels read and write through host pointers.
bool ref_offered_to(DeviceType device) {
  const DeviceBackend* b = DeviceRegistry::global().find(device);
  return b != nullptr && b->memory_is_host_accessible();
}

// Why `c` refuses `sig` (key dtype `key`), or "" if it takes it.
std::string refusal(const KernelCandidate& c, const KernelSignature& sig, DType key) {
  if (std::find(c.dtypes.begin(), c.dtypes.end(), key) == c.dtypes.end()) {
    return str_cat("dtype ", dtype_name(key), " not supported");
  }
  if (sig.deterministic && !c.deterministic) return "not deterministic";
  return c.decline ? c.decline(sig) : std::string();
}

}  // namespace

std::string KernelSignature::to_string() const {
  std::string s = op->name + "(";
  for (size_t i = 0; i < inputs.size(); ++i) s += (i ? ", " : "") + inputs[i].to_string();
  s += ") -> ";
  for (size_t i = 0; i < outputs.size(); ++i) s += (i ? ", " : "") + outputs[i].to_string();
  return s;
}

KernelRegistry& KernelRegistry::global() {
  static KernelRegistry registry;
  return registry;
}

void KernelRegistry::add(std::string_view op, KernelCandidate candidate) {
  auto it = table_.find(op);
  if (it == table_.end())
    it = table_.emplace(std::string(op), std::vector<KernelCandidate>{}).first;
  auto& list = it->second;
  for (auto& c : list) {
    if (c.name == candidate.name && c.device == candidate.device) {
      c = std::move(candidate);  // re-registration replaces
      return;
    }
  }
  list.push_back(std::move(candidate));
  std::stable_sort(
      list.begin(), list.end(),
      [](const KernelCandidate& a, const KernelCandidate& b) { return a.priority > b.priority; });
}

std::vector<const KernelCandidate*> KernelRegistry::candidates(std::string_view op,
                                                               DeviceType device) const {
  std::vector<const KernelCandidate*> out;
  auto it = table_.find(op);
  if (it == table_.end()) return out;
  for (const auto& c : it->second) {
    if (c.device == device) out.push_back(&c);
  }
  if (device != DeviceType::kCPU && ref_offered_to(device)) {
    for (const auto& c : it->second) {
      if (c.is_ref() && c.device == DeviceType::kCPU) out.push_back(&c);
    }
  }
  return out;
}

std::vector<const KernelCandidate*> KernelRegistry::all_candidates(std::string_view op) const {
  std::vector<const KernelCandidate*> out;
  auto it = table_.find(op);
  if (it != table_.end()) {
    for (const auto& c : it->second) out.push_back(&c);
  }
  return out;
}

std::vector<std::string> KernelRegistry::ops() const {
  std::vector<std::string> out;
  for (const auto& [op, list] : table_) out.push_back(op);
  return out;
}

KernelSelection KernelRegistry::select(const KernelSignature& sig, std::string_view force) const {
  KernelSelection sel;
  DType key = sig.key_dtype();
  bool forced_found = false;
  for (const KernelCandidate* c : candidates(sig.op->name, sig.device)) {
    if (!force.empty() && c->name != force) continue;
    forced_found = true;
    const std::string reason = refusal(*c, sig, key);
    if (!reason.empty()) {
      sel.declined.push_back(c->name + ": " + reason);
      continue;
    }
    sel.candidate = c;
    sel.kernel = c->create(sig);
    break;
  }
  if (verbose_enabled("kernels")) {
    std::string msg = sig.to_string() + " -> " + (sel.candidate ? sel.candidate->name : "none");
    for (const auto& d : sel.declined) msg += "\n    declined " + d;
    log_line("kernels", msg);
  }
  if (!sel.candidate) {
    if (!force.empty() && !forced_found) {
      throw_error(ErrorCode::kNotFound, "op '", sig.op->name, "' has no kernel '", force, "' on ",
                  device_type_name(sig.device));
    }
    std::string why;
    for (const auto& d : sel.declined) why += "; " + d;
    if (sig.device != DeviceType::kCPU && !ref_offered_to(sig.device)) {
      why += str_cat("; ref: not offered (", device_type_name(sig.device),
                     " memory is not host-accessible)");
    }
    if (sig.deterministic) {
      throw_error(ErrorCode::kFailedPrecondition, "op '", sig.op->name,
                  "' has no deterministic kernel for dtype ", dtype_name(key), " on ",
                  device_type_name(sig.device), " (determinism mode is on)", why);
    }
    throw_error(ErrorCode::kInvalidArgument, "op '", sig.op->name, "' has no kernel for dtype ",
                dtype_name(key), " on ", device_type_name(sig.device),
                why.empty() ? " (no candidates registered)" : why);
  }
  return sel;
}

bool KernelRegistry::has_fast(std::string_view op, DeviceType device, DType dtype) const {
  for (const KernelCandidate* c : candidates(op, device)) {
    if (!c->is_ref() && std::find(c->dtypes.begin(), c->dtypes.end(), dtype) != c->dtypes.end()) {
      return true;
    }
  }
  return false;
}

bool KernelRegistry::takes_fast(const KernelSignature& sig) const {
  const DType key = sig.key_dtype();
  for (const KernelCandidate* c : candidates(sig.op->name, sig.device)) {
    if (!c->is_ref() && refusal(*c, sig, key).empty()) return true;
  }
  return false;
}

bool KernelRegistry::has_ref(std::string_view op, DType dtype) const {
  for (const KernelCandidate* c : candidates(op, DeviceType::kCPU)) {
    if (c->is_ref() && std::find(c->dtypes.begin(), c->dtypes.end(), dtype) != c->dtypes.end()) {
      return true;
    }
  }
  return false;
}

void add_fn_kernel(KernelRegistry& r, std::string_view op, std::string name,
                   std::vector<DType> dtypes, int priority, KernelFn fn,
                   std::function<std::string(const KernelSignature&)> decline) {
  KernelCandidate c;
  c.name = std::move(name);
  c.dtypes = std::move(dtypes);
  c.priority = priority;
  c.decline = std::move(decline);
  c.create = [fn = std::move(fn)](const KernelSignature&) {
    return std::make_unique<FnKernel>(fn);
  };
  r.add(op, std::move(c));
}

}  // namespace tern::kernels
