// The device interface a backend implements, and the registry the runtime finds backends in.
// Modelled on a narrow buffer/stream split: an Allocator for bytes, a Stream for ordered work,
// copies between host and device memory, and optional Events. Each slot of DeviceBackend is marked
// required or optional; optional slots have defaults that are correct (if slower) everywhere.
// Backends register themselves from outside the runtime (tern/backends/backends.cc).
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tern/device/allocator.h"

namespace tern {

// kEmulated: a device emulated on the host for tests (tests/support/emulated_device.h). Its memory
// is host memory underneath, but it reports it as not host-accessible, so the runtime must treat it
// exactly like an accelerator's: explicit copies, no reference kernels, no host reads.
enum class DeviceType { kCPU, kCUDA, kEmulated };

std::string_view device_type_name(DeviceType type);  // "cpu", "cuda", "emu"

struct Device {
  DeviceType type = DeviceType::kCPU;
  int index = 0;
  bool operator==(const Device& o) const { return type == o.type && index == o.index; }
  std::string to_string() const;  // "cpu:0"
};

// An ordered queue of work on a device. Work submitted to one stream runs in order; the host waits
// with synchronize(). The CPU stream runs work inline.
class Stream {
 public:
  virtual ~Stream() = default;
  virtual void synchronize() = 0;
};

// A point in a stream's work: record() marks it, synchronize() blocks the host until the stream
// has reached it. The host's inline streams complete at once.
class Event {
 public:
  virtual ~Event() = default;
  virtual void record(Stream& stream) = 0;
  virtual void synchronize() = 0;
};

// Optional capabilities a backend may or may not have.
enum class DeviceCapability {
  kBF16Compute,  // native bf16 arithmetic (AVX512_BF16 / AMX on CPU)
  kF16Compute,   // native f16 arithmetic
  kBlockedLayouts,
  // bf16 matmuls run as f32 ones on operands widened from bf16, results rounded once (a CPU
  // without AMX, not AMD: its bf16 dot products are no faster than f32 FMAs): the compiler then
  // writes the widening into the graph, one conversion per tensor.
  kBF16WidenedContractions,
};

class DeviceBackend {
 public:
  virtual ~DeviceBackend() = default;

  // --- required ---
  virtual Device device() const = 0;
  virtual std::string description() const = 0;  // e.g. the CPU model and ISA
  // Where this device's tensors come from (the executable's arena, bound inputs, variables).
  virtual Allocator& allocator() = 0;
  virtual Stream& default_stream() = 0;
  // True if host code may read and write this device's memory through its pointers: then the
  // reference kernels may run on it and Tensor::data<T>() works. False for an accelerator.
  virtual bool memory_is_host_accessible() const = 0;
  // Copies are ordered on `stream`; the host buffer must stay alive until the stream reaches them.
  virtual void copy_host_to_device(void* dst, const void* src, size_t bytes, Stream& stream) = 0;
  virtual void copy_device_to_host(void* dst, const void* src, size_t bytes, Stream& stream) = 0;
  virtual void copy_device_to_device(void* dst, const void* src, size_t bytes, Stream& stream) = 0;
  virtual void fill_zero(void* dst, size_t bytes, Stream& stream) = 0;

  // --- optional ---
  // An event on this device; nullptr (the default) means callers synchronize the stream instead.
  virtual std::unique_ptr<Event> create_event() { return nullptr; }
  // Capabilities not claimed are absent (default: none).
  virtual bool supports(DeviceCapability) const { return false; }
  // Intra-op threads this backend uses (OpenMP on the CPU). Default: one, not settable. The
  // setting holds for every thread that runs kernels, not only the one that set it.
  virtual void set_num_threads(int) {}
  virtual int num_threads() const { return 1; }
  // Called by the runtime on the thread about to run this backend's kernels (a server's request
  // thread, say): applies per-thread state such as the thread count. Must be cheap when nothing
  // changed. Default: nothing to apply.
  virtual void prepare_calling_thread() {}

  DeviceType type() const { return device().type; }
};

// Completes inline: the event of host streams.
class HostEvent final : public Event {
 public:
  void record(Stream&) override {}
  void synchronize() override {}
};

// A stream that runs work inline on the calling thread (the CPU's and the host's).
class InlineStream final : public Stream {
 public:
  void synchronize() override {}
};
// For host code that needs a stream (tests calling kernels directly, host tensors).
Stream& host_stream();

class DeviceRegistry {
 public:
  static DeviceRegistry& global();
  // Adds a backend; InvalidArgument if one of that type is registered (tensors point at it).
  void add(std::unique_ptr<DeviceBackend> backend);
  // nullptr if no backend of that type is registered.
  DeviceBackend* find(DeviceType type) const;
  // NotFound naming the device type and the registered ones.
  DeviceBackend& get(DeviceType type) const;
  // Every registered backend, in registration order.
  std::vector<DeviceBackend*> backends() const;

 private:
  std::vector<std::unique_ptr<DeviceBackend>> backends_;
};

}  // namespace tern
