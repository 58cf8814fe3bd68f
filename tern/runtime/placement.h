// Placement: which device runs each node of a compiled graph, and where copies go.
//   - A node runs on the compile device when a kernel there accepts it.
//   - Otherwise, when the compile device's memory is not host-accessible (an accelerator), it
//     runs on the CPU; the executable then copies its operands to the host and its results back
//     (one copy step per value and device per run; constants are copied once, at compile time).
//   - An op that mutates its inputs (assign, optimizer updates) never moves: the mutation would
//     land on a copy. Such an op without a kernel on the compile device is an error.
// Does not: split work across devices for speed, or move variables (they live where the
// VariableStore put them).
#pragma once

#include <memory>
#include <string>

#include "tern/device/device.h"
#include "tern/kernels/kernel.h"

namespace tern::runtime {

struct Placement {
  kernels::KernelSelection selection;
  DeviceBackend* device = nullptr;  // where the kernel runs
};

// Selects a kernel for `sig` (whose device is the compile device `home`), falling back to the
// CPU as above. `force` names the only candidate to use (tests), as in KernelRegistry::select.
Placement place_node(const kernels::KernelSignature& sig, DeviceBackend& home,
                     const std::string& force);

// True if a kernel running on `consumer` cannot read `value` where it lives.
bool needs_copy(const Tensor& value, const DeviceBackend& consumer);

// A kernel that copies its one input into its one output (across devices; "h2d", "d2h", "d2d").
std::unique_ptr<kernels::Kernel> make_copy_kernel();
// "h2d", "d2h" or "d2d" for a copy of `from` to a tensor on `to`.
std::string copy_kind(const Tensor& from, const DeviceBackend& to);

}  // namespace tern::runtime
