// Device names and the backend registry.
#include "tern/device/device.h"

#include "tern/base/error.h"

namespace tern {

std::string_view device_type_name(DeviceType type) {
  switch (type) {
    case DeviceType::kCPU:
      return "cpu";
    case DeviceType::kCUDA:
      return "cuda";
  }
  return "?";
}

std::string Device::to_string() const {
  return str_cat(device_type_name(type), ":", index);
}

DeviceRegistry& DeviceRegistry::global() {
  static DeviceRegistry registry;
  return registry;
}

void DeviceRegistry::add(std::unique_ptr<DeviceBackend> backend) {
  for (auto& b : backends_) {
    if (b->type() == backend->type()) {
      b = std::move(backend);
      return;
    }
  }
  backends_.push_back(std::move(backend));
}

DeviceBackend* DeviceRegistry::find(DeviceType type) const {
  for (const auto& b : backends_) {
    if (b->type() == type) return b.get();
  }
  return nullptr;
}

DeviceBackend& DeviceRegistry::get(DeviceType type) const {
  DeviceBackend* b = find(type);
  if (!b)
    throw_error(ErrorCode::kNotFound, "no backend registered for device ", device_type_name(type));
  return *b;
}

}  // namespace tern
