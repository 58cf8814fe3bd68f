// A second device for tests: "emu", a DeviceBackend that is not the host as far as the runtime
// knows. Its memory is host memory underneath (its own HostAllocator), but it reports it as not
// host-accessible, so tensors on it can only be reached through its copy slots, and the CPU's
// reference kernels are not offered to it. Its kernels are the CPU's (every candidate, ref
// included, registered again for DeviceType::kEmulated under the same name, dtypes, priority and
// decline rule), run on host views of the device buffers. Copies and synchronizations are
// counted, so tests can assert that a step copies exactly what it must.
#pragma once

#include <atomic>
#include <cstring>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "tern/device/device.h"
#include "tern/kernels/kernel.h"
#include "tern/runtime/runtime.h"

namespace tern::testing {

struct CopyCounts {
  int64_t host_to_device = 0, device_to_host = 0, device_to_device = 0;
  int64_t bytes = 0;
  int64_t total() const { return host_to_device + device_to_host + device_to_device; }
};

class EmulatedDevice final : public DeviceBackend {
 public:
  Device device() const override { return {DeviceType::kEmulated, 0}; }
  std::string description() const override {
    return "emulated device (host memory behind explicit copies; tests only)";
  }
  Allocator& allocator() override { return allocator_; }
  Stream& default_stream() override { return stream_; }
  bool memory_is_host_accessible() const override { return false; }
  void copy_host_to_device(void* dst, const void* src, size_t bytes, Stream&) override {
    std::memcpy(dst, src, bytes);
    ++h2d_;
    bytes_ += static_cast<int64_t>(bytes);
  }
  void copy_device_to_host(void* dst, const void* src, size_t bytes, Stream&) override {
    std::memcpy(dst, src, bytes);
    ++d2h_;
    bytes_ += static_cast<int64_t>(bytes);
  }
  void copy_device_to_device(void* dst, const void* src, size_t bytes, Stream&) override {
    std::memcpy(dst, src, bytes);
    ++d2d_;
    bytes_ += static_cast<int64_t>(bytes);
  }
  void fill_zero(void* dst, size_t bytes, Stream&) override { std::memset(dst, 0, bytes); }
  std::unique_ptr<Event> create_event() override { return std::make_unique<HostEvent>(); }
  // The CPU's kernels run behind it, so it can do what the CPU can.
  bool supports(DeviceCapability c) const override {
    return DeviceRegistry::global().get(DeviceType::kCPU).supports(c);
  }

  CopyCounts copies() const { return {h2d_.load(), d2h_.load(), d2d_.load(), bytes_.load()}; }
  void reset_copies() { h2d_ = d2h_ = d2d_ = bytes_ = 0; }

 private:
  HostAllocator allocator_{"emu:0"};
  InlineStream stream_;
  std::atomic<int64_t> h2d_{0}, d2h_{0}, d2d_{0}, bytes_{0};
};

// A host view of a device buffer: what the emulated device's "driver" may do, and nothing else.
inline Tensor emulated_host_view(const Tensor& t) {
  auto storage = Storage::wrap(const_cast<void*>(t.raw_data()), t.nbytes());
  return Tensor(t.dtype(), t.shape(), std::move(storage), 0);
}

// Runs a CPU kernel on host views of the device tensors.
class EmulatedKernel final : public kernels::Kernel {
 public:
  explicit EmulatedKernel(std::unique_ptr<kernels::Kernel> cpu) : cpu_(std::move(cpu)) {}
  void run(kernels::KernelContext& ctx) override {
    std::vector<Tensor> in, out;
    for (const Tensor& t : ctx.inputs) in.push_back(emulated_host_view(t));
    for (const Tensor& t : ctx.outputs) out.push_back(emulated_host_view(t));
    kernels::KernelContext host{in, out, ctx.attrs, host_stream()};
    cpu_->run(host);
  }

 private:
  std::unique_ptr<kernels::Kernel> cpu_;
};

// Registers the emulated device once, with a kernel for every CPU candidate except those of the
// ops in `without` (to test placement); later calls return the same device.
inline EmulatedDevice& register_emulated_device(const std::set<std::string>& without = {}) {
  runtime::initialize();
  auto& devices = DeviceRegistry::global();
  if (auto* existing = devices.find(DeviceType::kEmulated)) {
    return static_cast<EmulatedDevice&>(*existing);
  }
  auto owned = std::make_unique<EmulatedDevice>();
  EmulatedDevice& device = *owned;
  devices.add(std::move(owned));
  auto& registry = kernels::KernelRegistry::global();
  for (const std::string& op : registry.ops()) {
    if (without.count(op)) continue;
    std::vector<kernels::KernelCandidate> cpu;  // copied first: add() grows the list
    for (const kernels::KernelCandidate* c : registry.candidates(op, DeviceType::kCPU)) {
      cpu.push_back(*c);
    }
    for (kernels::KernelCandidate& emu : cpu) {
      emu.device = DeviceType::kEmulated;
      emu.create = [cpu_create = emu.create](const kernels::KernelSignature& sig) {
        kernels::KernelSignature on_cpu = sig;
        on_cpu.device = DeviceType::kCPU;
        return std::unique_ptr<kernels::Kernel>(
            std::make_unique<EmulatedKernel>(cpu_create(on_cpu)));
      };
      registry.add(op, std::move(emu));
    }
  }
  return device;
}

}  // namespace tern::testing
