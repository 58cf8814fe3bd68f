// Allocator: where a device's bytes come from, with honest accounting (in use, peak, limit).
// HostAllocator is the aligned host implementation: the process-wide allocator of plain host
// tensors (host_allocator()) and the CPU device's own allocator are two instances of it.
#pragma once

#include <atomic>
#include <cstddef>
#include <string>

namespace tern {

struct MemoryStats {
  size_t bytes_in_use = 0;  // allocated and not yet deallocated (rounded sizes)
  size_t peak_bytes_in_use = 0;
  size_t limit = 0;  // 0 = none
  size_t num_allocs = 0;
};

class Allocator {
 public:
  virtual ~Allocator() = default;
  // Required. `bytes` may be 0. ResourceExhausted naming the sizes when the limit or the device
  // memory would be exceeded. `deallocate` gets the size and alignment that were asked for.
  virtual void* allocate(size_t bytes, size_t alignment) = 0;
  virtual void deallocate(void* ptr, size_t bytes, size_t alignment) = 0;
  virtual MemoryStats stats() const = 0;
  // A cap on bytes_in_use, like TensorFlow's per-GPU memory_limit; 0 removes it.
  virtual void set_limit(size_t bytes) = 0;
  virtual void reset_peak() = 0;
  // For error messages: "cpu:0", "emu:0", "host".
  virtual std::string name() const = 0;
};

// Rounds every request up to a multiple of its alignment; accounting is lock-free.
class HostAllocator final : public Allocator {
 public:
  explicit HostAllocator(std::string name) : name_(std::move(name)) {}
  void* allocate(size_t bytes, size_t alignment) override;
  void deallocate(void* ptr, size_t bytes, size_t alignment) override;
  MemoryStats stats() const override;
  void set_limit(size_t bytes) override { limit_.store(bytes); }
  void reset_peak() override { peak_.store(in_use_.load()); }
  std::string name() const override { return name_; }

 private:
  std::string name_;
  std::atomic<size_t> in_use_{0};
  std::atomic<size_t> peak_{0};
  std::atomic<size_t> limit_{0};
  std::atomic<size_t> num_allocs_{0};
};

// Plain host tensors (Tensor(dtype, shape)): data pipelines, eager results, user tensors.
Allocator& host_allocator();

// Bytes as "12.5 MiB" for memory reports and errors.
std::string format_bytes(size_t bytes);

}  // namespace tern
