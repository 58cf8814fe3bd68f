// Storage: a refcounted, aligned byte buffer that knows its device. Plain storage is host memory
// from host_allocator(); device storage comes from a DeviceBackend's allocator and is returned to
// it; wrapped storage borrows memory owned elsewhere (e.g. a decoded file).
#pragma once

#include <cstddef>
#include <functional>
#include <memory>

#include "tern/device/device.h"

namespace tern {

inline constexpr size_t kStorageAlignment = 64;

class Storage {
 public:
  // `bytes` zero-initialized, 64-byte aligned host bytes from host_allocator().
  static std::shared_ptr<Storage> allocate(size_t bytes);
  // The same, not initialized: for a caller that writes every byte before anyone reads one.
  static std::shared_ptr<Storage> allocate_uninitialized(size_t bytes);
  // `bytes` zero-initialized bytes from `device`'s allocator (ResourceExhausted over its limit).
  static std::shared_ptr<Storage> allocate(DeviceBackend& device, size_t bytes);
  // Wraps host memory owned elsewhere; `release` (may be empty) runs when the last reference dies.
  static std::shared_ptr<Storage> wrap(void* data, size_t bytes,
                                       std::function<void()> release = {});
  // Wraps memory of `device` owned elsewhere.
  static std::shared_ptr<Storage> wrap(DeviceBackend& device, void* data, size_t bytes,
                                       std::function<void()> release = {});

  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  // The bytes' address on their device (a device pointer for an accelerator).
  void* data() { return data_; }
  const void* data() const { return data_; }
  size_t bytes() const { return bytes_; }
  // nullptr for plain host memory.
  DeviceBackend* backend() const { return backend_; }
  Device device() const;  // "host" memory reports cpu:0
  // True if host code may touch the bytes (plain host memory, or a host-accessible device).
  bool is_host_accessible() const { return host_accessible_; }

 private:
  Storage(void* data, size_t bytes, DeviceBackend* backend, std::function<void()> release);
  void* data_;
  size_t bytes_;
  DeviceBackend* backend_;
  bool host_accessible_;
  std::function<void()> release_;
};

}  // namespace tern
