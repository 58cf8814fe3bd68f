// Device, Allocator and Stream: the narrow interface a backend implements, and the registry that
// finds a backend by device type. Optional capabilities are asked with supports(), never found by
// crashing.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace tern {

enum class DeviceType { kCPU, kCUDA };

std::string_view device_type_name(DeviceType type);

struct Device {
  DeviceType type = DeviceType::kCPU;
  int index = 0;
  bool operator==(const Device& o) const { return type == o.type && index == o.index; }
  std::string to_string() const;  // "cpu:0"
};

class Allocator {
 public:
  virtual ~Allocator() = default;
  virtual void* allocate(size_t bytes, size_t alignment) = 0;
  virtual void deallocate(void* ptr) = 0;
  // Bytes currently allocated through this allocator (for memory reports).
  virtual size_t bytes_in_use() const = 0;
  virtual size_t peak_bytes_in_use() const = 0;
};

// An ordered queue of work on a device. The CPU stream runs work inline.
class Stream {
 public:
  virtual ~Stream() = default;
  virtual void synchronize() = 0;
};

// Optional capabilities a backend may or may not have.
enum class DeviceCapability {
  kBF16Compute,  // native bf16 arithmetic (AVX512_BF16 / AMX on CPU)
  kF16Compute,   // native f16 arithmetic
  kBlockedLayouts,
};

class DeviceBackend {
 public:
  virtual ~DeviceBackend() = default;
  virtual DeviceType type() const = 0;
  virtual std::string description() const = 0;  // e.g. the CPU model and ISA
  virtual Allocator& allocator() = 0;
  virtual Stream& default_stream() = 0;
  virtual bool supports(DeviceCapability capability) const = 0;
  // Intra-op threads this backend uses (OpenMP on CPU).
  virtual void set_num_threads(int n) = 0;
  virtual int num_threads() const = 0;
};

class DeviceRegistry {
 public:
  static DeviceRegistry& global();
  void add(std::unique_ptr<DeviceBackend> backend);
  // nullptr if no backend of that type is registered.
  DeviceBackend* find(DeviceType type) const;
  // NotFound naming the device type.
  DeviceBackend& get(DeviceType type) const;

 private:
  std::vector<std::unique_ptr<DeviceBackend>> backends_;
};

}  // namespace tern
