// One-time initialization and intra-op threads, through the device registry.
#include "tern/runtime/runtime.h"

#include <mutex>

#include "tern/backends/backends.h"
#include "tern/device/device.h"

namespace tern::runtime {

void initialize() {
  static std::once_flag once;
  std::call_once(once, [] { backends::register_backends(); });
}

void set_intra_op_threads(int n) {
  initialize();
  for (DeviceBackend* b : DeviceRegistry::global().backends()) b->set_num_threads(n);
}

int intra_op_threads() {
  initialize();
  return DeviceRegistry::global().get(DeviceType::kCPU).num_threads();
}

}  // namespace tern::runtime
