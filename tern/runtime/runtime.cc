// One-time initialization and intra-op threads, through the device registry.
#include "tern/runtime/runtime.h"

#include <mutex>

#include "tern/backends/backends.h"
#include "tern/base/error.h"
#include "tern/base/thread_pool.h"
#include "tern/device/device.h"

namespace tern::runtime {

void initialize() {
  static std::once_flag once;
  std::call_once(once, [] { backends::register_backends(); });
}

void set_intra_op_threads(int n) {
  if (std::string why = thread_count_problem(n, /*zero_ok=*/true); !why.empty()) {
    throw_error(ErrorCode::kInvalidArgument, "intra-op threads ", why);
  }
  initialize();
  for (DeviceBackend* b : DeviceRegistry::global().backends()) b->set_num_threads(n);
}

int intra_op_threads() {
  initialize();
  return DeviceRegistry::global().get(DeviceType::kCPU).num_threads();
}

}  // namespace tern::runtime
