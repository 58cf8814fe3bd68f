// Host and device storage.
#include "tern/tensor/storage.h"

#include <cstring>

namespace tern {

Storage::Storage(void* data, size_t bytes, DeviceBackend* backend, std::function<void()> release)
    : data_(data),
      bytes_(bytes),
      backend_(backend),
      host_accessible_(!backend || backend->memory_is_host_accessible()),
      release_(std::move(release)) {}

std::shared_ptr<Storage> Storage::allocate(size_t bytes) {
  std::shared_ptr<Storage> s = allocate_uninitialized(bytes);
  std::memset(s->data(), 0, bytes);
  return s;
}

std::shared_ptr<Storage> Storage::allocate_uninitialized(size_t bytes) {
  Allocator& a = host_allocator();
  void* p = a.allocate(bytes, kStorageAlignment);
  return std::shared_ptr<Storage>(new Storage(
      p, bytes, nullptr, [&a, p, bytes] { a.deallocate(p, bytes, kStorageAlignment); }));
}

std::shared_ptr<Storage> Storage::allocate(DeviceBackend& device, size_t bytes) {
  Allocator& a = device.allocator();
  void* p = a.allocate(bytes, kStorageAlignment);
  if (device.memory_is_host_accessible()) {
    std::memset(p, 0, bytes);
  } else {
    device.fill_zero(p, bytes, device.default_stream());
  }
  return std::shared_ptr<Storage>(new Storage(
      p, bytes, &device, [&a, p, bytes] { a.deallocate(p, bytes, kStorageAlignment); }));
}

std::shared_ptr<Storage> Storage::wrap(void* data, size_t bytes, std::function<void()> release) {
  return std::shared_ptr<Storage>(new Storage(data, bytes, nullptr, std::move(release)));
}

std::shared_ptr<Storage> Storage::wrap(DeviceBackend& device, void* data, size_t bytes,
                                       std::function<void()> release) {
  return std::shared_ptr<Storage>(new Storage(data, bytes, &device, std::move(release)));
}

Storage::~Storage() {
  if (release_) release_();
}

Device Storage::device() const {
  return backend_ ? backend_->device() : Device{};
}

}  // namespace tern
