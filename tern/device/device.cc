// Device names, host streams and the backend registry.
#include "tern/device/device.h"

#include "tern/base/error.h"

namespace tern {

std::string_view device_type_name(DeviceType type) {
  switch (type) {
    case DeviceType::kCPU:
      return "cpu";
    case DeviceType::kCUDA:
      return "cuda";
    case DeviceType::kEmulated:
      return "emu";
  }
  return "?";
}

std::string Device::to_string() const {
  return str_cat(device_type_name(type), ":", index);
}

Stream& host_stream() {
  static InlineStream stream;
  return stream;
}

DeviceRegistry& DeviceRegistry::global() {
  // Never destroyed: tensors in other statics may still return memory to a backend at exit.
  static DeviceRegistry* registry = new DeviceRegistry();
  return *registry;
}

void DeviceRegistry::add(std::unique_ptr<DeviceBackend> backend) {
  if (find(backend->type())) {
    throw_error(ErrorCode::kInvalidArgument, "a backend for device ",
                device_type_name(backend->type()), " is already registered");
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
  if (!b) {
    std::string known;
    for (const auto& r : backends_)
      known += str_cat(known.empty() ? "" : ", ", r->device().to_string());
    throw_error(ErrorCode::kNotFound, "no backend registered for device ", device_type_name(type),
                " (registered: ", known.empty() ? "none" : known, ")");
  }
  return *b;
}

std::vector<DeviceBackend*> DeviceRegistry::backends() const {
  std::vector<DeviceBackend*> out;
  for (const auto& b : backends_) out.push_back(b.get());
  return out;
}

}  // namespace tern
